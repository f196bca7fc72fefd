// Alice's tile size: the assignment launches 16 x 16 threads per block.
#define TILE 16
