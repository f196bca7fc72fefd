// mmcheck's <assert.h> for NVRTC: see <cassert> beside it.
#pragma once
