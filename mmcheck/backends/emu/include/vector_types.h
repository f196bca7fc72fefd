// Stand-in for the CUDA toolkit header of this name: on the emulator, shim.h (force-included) already
// declares what it would.
#pragma once
