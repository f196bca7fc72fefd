// mmcheck's <stdlib.h> for NVRTC: see <cstdlib> beside it.
#pragma once
#include <cstdlib>
