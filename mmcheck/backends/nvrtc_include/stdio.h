// mmcheck's <stdio.h> for NVRTC: see <cstdio> beside it.
#pragma once
