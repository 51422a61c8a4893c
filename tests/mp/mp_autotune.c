/* SPDX-License-Identifier: Apache-2.0 */
/* Autotune (HVD_AUTOTUNE=1, HVD_AUTOTUNE_LOG=<dir>/tune.csv): steps of small allreduces run
 * until rank 0's log shows the search ended. Checks that results stay exact while the
 * parameters change, that every rank ends with rank 0's choice (hvd_config_get), and that
 * every rank adopted the same sequence of parameters (<log>.<rank>) that rank 0 sampled
 * (<log>). Usage: mp_autotune LOG_PATH */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mp_check.h"

enum { kTensors = 8, kLen = 1024, kMaxSteps = 20000, kLine = 256 };

static void one_step(int step) {
    static float data[kTensors][kLen];
    hvd_request_h reqs[kTensors];
    int64_t shape[1] = {kLen};
    for (int t = 0; t < kTensors; ++t) {
        for (int i = 0; i < kLen; ++i)
            data[t][i] = (float)(mp_rank + t + (i % 7) + step % 5);
        hvd_tensor_t x = mp_tensor(data[t], HVD_DTYPE_FLOAT32, 1, shape);
        if (hvd_allreduce_enqueue(mp_ctx, &x, &x, NULL, &reqs[t]) != HVD_OK)
            mp_die("allreduce enqueue failed at step %d", step);
    }
    double ranks_sum = mp_size * (mp_size - 1) / 2.0;
    for (int t = 0; t < kTensors; ++t) {
        if (mp_wait(reqs[t]) != HVD_OK) mp_die("allreduce failed at step %d", step);
        hvd_request_release(reqs[t]);
        for (int i = 0; i < kLen; ++i) {
            double expect = ranks_sum + mp_size * (double)(t + (i % 7) + step % 5);
            if (data[t][i] != (float)expect)
                mp_die("step %d tensor %d [%d] = %g, expected %g", step, t, i, data[t][i], expect);
        }
    }
}

/* Rank 0 decides, every rank learns it: whether the search has ended. */
static int search_ended(const char *log) {
    int32_t flag = 0;
    if (mp_rank == 0) {
        FILE *f = fopen(log, "r");
        char line[kLine];
        while (f != NULL && fgets(line, sizeof line, f) != NULL)
            if (strstr(line, ",final") != NULL) flag = 1;
        if (f != NULL) fclose(f);
    }
    int64_t shape[1] = {1};
    hvd_tensor_t t = mp_tensor(&flag, HVD_DTYPE_INT32, 1, shape);
    hvd_request_h req;
    if (hvd_broadcast_enqueue(mp_ctx, &t, &t, NULL, &req) != HVD_OK || mp_wait(req) != HVD_OK)
        mp_die("broadcast of the search state failed");
    hvd_request_release(req);
    return flag;
}

/* Whether every rank reports the same fusion threshold and cycle time (one allgather). */
static int all_ranks_agree(double *mine) {
    hvd_config_get(mp_ctx, HVD_CONFIG_FUSION_THRESHOLD, &mine[0]);
    hvd_config_get(mp_ctx, HVD_CONFIG_CYCLE_TIME, &mine[1]);
    int64_t shape[1] = {2};
    hvd_tensor_t t = mp_tensor(mine, HVD_DTYPE_FLOAT64, 1, shape);
    hvd_request_h req;
    if (hvd_allgather_enqueue(mp_ctx, &t, NULL, &req) != HVD_OK || mp_wait(req) != HVD_OK)
        mp_die("allgather of the parameters failed");
    hvd_tensor_t out;
    hvd_request_output(req, 0, &out);
    const double *all = (const double *)out.data;
    int same = 1;
    for (int r = 0; r < mp_size; ++r)
        same = same && all[2 * r] == mine[0] && all[2 * r + 1] == mine[1];
    hvd_request_release(req);
    return same;
}

/* Line parsers: rank 0's sample log ("sample,threshold,cycle,score,state") and a rank's
 * adoption log ("epoch,threshold,cycle"). Return 1 and the pair for a data line. */
static int parse_sample(const char *line, long long *threshold, double *cycle) {
    long long sample;
    double score;
    char state[32];
    return sscanf(line, "%lld,%lld,%lf,%lf,%31s", &sample, threshold, cycle, &score, state) == 5;
}

static int parse_adoption(const char *line, long long *threshold, double *cycle) {
    unsigned long long epoch;
    return sscanf(line, "%llu,%lld,%lf", &epoch, threshold, cycle) == 3;
}

/* The "threshold,cycle" pairs of a log, in order, without repeats. */
static int pair_sequence(const char *path, int (*parse)(const char *, long long *, double *),
                         char seq[][64], int max) {
    FILE *f = fopen(path, "r");
    if (f == NULL) mp_die("cannot read %s", path);
    char line[kLine];
    int n = 0;
    long long threshold;
    double cycle;
    while (fgets(line, sizeof line, f) != NULL) {
        if (!parse(line, &threshold, &cycle)) continue;
        char pair[64];
        snprintf(pair, sizeof pair, "%lld,%.3f", threshold, cycle);
        if ((n == 0 || strcmp(seq[n - 1], pair) != 0) && n < max) strcpy(seq[n++], pair);
    }
    fclose(f);
    return n;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: mp_autotune LOG_PATH\n");
        return 2;
    }
    const char *log = argv[1];
    mp_init();
    int step = 0;
    while (!search_ended(log)) {
        if (++step > kMaxSteps) mp_die("autotune did not finish within %d steps", kMaxSteps);
        one_step(step);
    }
    if (step == 0) mp_die("the search had ended before the first step (a stale log?)");
    double mine[2];
    int agreed = 0;
    for (int round = 0; round < 200 && !agreed; ++round) {
        one_step(step);
        agreed = all_ranks_agree(mine);
    }
    if (!agreed) mp_die("ranks still disagree on the autotuned parameters");
    hvd_request_h req;
    hvd_barrier_enqueue(mp_ctx, NULL, &req);
    mp_wait(req);
    hvd_request_release(req);
    if (mp_rank == 0) {
        static char sampled[128][64], adopted[128][64];
        int ns = pair_sequence(log, parse_sample, sampled, 128);
        if (ns < 10) mp_die("rank 0 sampled only %d parameter settings", ns);
        for (int r = 0; r < mp_size; ++r) {
            char path[kLine];
            snprintf(path, sizeof path, "%s.%d", log, r);
            int na = pair_sequence(path, parse_adoption, adopted, 128);
            /* the final choice is adopted after the last sampled point */
            if (na != ns && na != ns + 1)
                mp_die("rank %d adopted %d settings, rank 0 sampled %d", r, na, ns);
            for (int i = 0; i < ns; ++i)
                if (strcmp(sampled[i], adopted[i]) != 0)
                    mp_die("rank %d's setting %d is %s, rank 0 sampled %s", r, i, adopted[i],
                           sampled[i]);
        }
    }
    printf("rank %d: autotune ok after %d steps: fusion threshold %.0f bytes, cycle time %.3f ms\n",
           mp_rank, step, mine[0], mine[1]);
    mp_finalize();
    return 0;
}
