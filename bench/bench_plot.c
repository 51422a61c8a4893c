/* SPDX-License-Identifier: Apache-2.0 */
/* Plotting through a python3 child: the program text, with the data and the path embedded as
 * literals, goes to its stdin, so no file name or value is ever parsed by a shell. */
#define _GNU_SOURCE
#include "bench_plot.h"

#include <stdio.h>
#include <sys/wait.h>

/* Debian's matplotlib lives in the system interpreter, not in a virtual environment. */
#define PLOT_PYTHON "/usr/bin/python3"

static const char kPlotScript[] =
    "import sys\n"
    "try:\n"
    "    import matplotlib\n"
    "    matplotlib.use('Agg')\n"
    "    import matplotlib.pyplot as plt\n"
    "except ImportError:\n"
    "    sys.stderr.write('hvd_bench: --plot needs matplotlib for " PLOT_PYTHON
    ": apt-get install python3-matplotlib\\n')\n"
    "    sys.exit(3)\n"
    "fig, ax = plt.subplots(figsize=(8, 4.5))\n"
    "ax.plot(sizes, busbw, marker='o')\n"
    "ax.set_xscale('log', base=2)\n"
    "ax.set_xlabel('message size (bytes)')\n"
    "ax.set_ylabel('busbw (GB/s)')\n"
    "ax.set_title(title)\n"
    "ax.grid(True, which='both', alpha=0.3)\n"
    "fig.tight_layout()\n"
    "fig.savefig(path, dpi=100)\n";

/* A Python bytes literal of s, every byte hex-escaped: safe for any path or title. */
static void write_bytes_literal(FILE *f, const char *name, const char *s) {
    fprintf(f, "%s = b'", name);
    for (const unsigned char *p = (const unsigned char *)s; *p; ++p)
        fprintf(f, "\\x%02x", *p);
    fprintf(f, "'.decode('utf-8', 'replace')\n");
}

int bench_plot(const char *path, const char *title, const size_t *bytes, const double *busbw,
               int n) {
    FILE *py = popen(PLOT_PYTHON " -", "w");
    if (!py) {
        perror("hvd_bench: --plot: cannot start " PLOT_PYTHON);
        return -1;
    }
    write_bytes_literal(py, "path", path);
    write_bytes_literal(py, "title", title);
    fprintf(py, "sizes = [");
    for (int i = 0; i < n; ++i)
        fprintf(py, "%zu,", bytes[i]);
    fprintf(py, "]\nbusbw = [");
    for (int i = 0; i < n; ++i)
        fprintf(py, "%.6g,", busbw[i]);
    fprintf(py, "]\n%s", kPlotScript);
    int st = pclose(py);
    if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        if (!(WIFEXITED(st) && WEXITSTATUS(st) == 3))
            fprintf(stderr, "hvd_bench: --plot %s: " PLOT_PYTHON " failed (status %d)\n", path, st);
        return -1;
    }
    return 0;
}
