// SPDX-License-Identifier: Apache-2.0
/* --plot FILE.png: busbw against message size, drawn by Debian's python3-matplotlib. */
#ifndef HVD_BENCH_PLOT_H_
#define HVD_BENCH_PLOT_H_

#include <stddef.h>

/* Draws the n points (size in bytes, busbw in GB/s) into path. Returns 0 on success, else
 * prints why (matplotlib missing, python failed) to stderr and returns -1. */
int bench_plot(const char *path, const char *title, const size_t *bytes, const double *busbw,
               int n);

#endif /* HVD_BENCH_PLOT_H_ */
