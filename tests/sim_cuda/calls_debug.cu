// calls.cu's checks built with -G: nvcc's debug PTX, where every device function stays a .func (the kernel calls
// each one, the CUDA headers' too), each with its own stack frame, and .loc lines throughout. Correct: the rotation.
// nvcc: -G
// archs: sm_90
// expect: ok
// block: 64
// smem: 0
#include "calls.cu"
