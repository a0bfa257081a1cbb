/* mock_cudnn.h - what the cuDNN stand-in (mock_cudnn.c) counts, for tests of the
 * backend's cuDNN paths: convolutions it ran, and runs of the "fail-first" candidate it
 * refused with NOT_SUPPORTED (KILN_MOCK_CUDNN=fail-first), and runs of the
 * "inexact-first" candidate. */
#ifndef MOCK_CUDNN_H
#define MOCK_CUDNN_H

long mock_cudnn_stat_runs(void);
long mock_cudnn_stat_rejected(void);
long mock_cudnn_stat_inexact(void); /* runs of the "inexact-first" candidate (16-bit) */
void mock_cudnn_stat_reset(void);

#endif
