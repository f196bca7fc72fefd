#define TILE 16
