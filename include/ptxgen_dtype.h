/* Element types shared by generators and the runner. */
#ifndef PTXGEN_DTYPE_H
#define PTXGEN_DTYPE_H
typedef enum { DT_BF16 = 0, DT_FP16 = 1 } DType;
#endif
