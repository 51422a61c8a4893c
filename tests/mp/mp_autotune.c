/* SPDX-License-Identifier: Apache-2.0 */
/* Autotune (HVD_AUTOTUNE=1, HVD_AUTOTUNE_LOG=<dir>/tune.csv): steps of small allreduces run
 * until rank 0's log shows the search ended. Checks that results stay exact while the
 * parameters change (the response cache switched on and off among them, and with
 * MP_EXPECT_HIERARCHICAL=1, in a job that spans hosts, hierarchical allreduce too), that every
 * rank ends with rank 0's choice (hvd_config_get), that every rank adopted the same sequence
 * of parameters (<log>.<rank>) that rank 0 sampled (<log>), and that rank 0 scored as many
 * points as HVD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES (or, for a grid search, MP_EXPECT_POINTS) says,
 * both cache settings among them.
 * Usage: mp_autotune LOG_PATH */
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

/* Whether every rank reports the same fusion threshold, cycle time and cache capacity (one
 * allgather). */
static int all_ranks_agree(double *mine) {
    hvd_config_get(mp_ctx, HVD_CONFIG_FUSION_THRESHOLD, &mine[0]);
    hvd_config_get(mp_ctx, HVD_CONFIG_CYCLE_TIME, &mine[1]);
    hvd_config_get(mp_ctx, HVD_CONFIG_CACHE_CAPACITY, &mine[2]);
    int64_t shape[1] = {3};
    hvd_tensor_t t = mp_tensor(mine, HVD_DTYPE_FLOAT64, 1, shape);
    hvd_request_h req;
    if (hvd_allgather_enqueue(mp_ctx, &t, NULL, &req) != HVD_OK || mp_wait(req) != HVD_OK)
        mp_die("allgather of the parameters failed");
    hvd_tensor_t out;
    hvd_request_output(req, 0, &out);
    const double *all = (const double *)out.data;
    int same = 1;
    for (int r = 0; r < mp_size; ++r)
        same =
            same && all[3 * r] == mine[0] && all[3 * r + 1] == mine[1] && all[3 * r + 2] == mine[2];
    hvd_request_release(req);
    return same;
}

/* Line parsers: rank 0's sample log ("sample,threshold,cycle,cache,hierarchical,score,state")
 * and a rank's adoption log ("epoch,threshold,cycle,cache,hierarchical"). Return 1 and the
 * parameters for a data line (the state too for a sample line). */
typedef struct {
    long long threshold, cache;
    double cycle;
    char hierarchical[32];
    char state[32];
} tune_line_t;

static int parse_sample(const char *line, tune_line_t *t) {
    long long sample;
    double score;
    return sscanf(line, "%lld,%lld,%lf,%lld,%31[^,],%lf,%31s", &sample, &t->threshold, &t->cycle,
                  &t->cache, t->hierarchical, &score, t->state) == 7;
}

static int parse_adoption(const char *line, tune_line_t *t) {
    unsigned long long epoch;
    t->state[0] = '\0';
    return sscanf(line, "%llu,%lld,%lf,%lld,%31[^,\n]", &epoch, &t->threshold, &t->cycle, &t->cache,
                  t->hierarchical) == 5;
}

/* The "threshold,cycle,cache,hierarchical" settings of a log, in order, without repeats;
 * *states gets a bit per cache setting seen (1: off, 2: on) and per hierarchical allreduce
 * setting (4: off, 8: on). */
static int pair_sequence(const char *path, int (*parse)(const char *, tune_line_t *),
                         char seq[][96], int max, int *states) {
    FILE *f = fopen(path, "r");
    if (f == NULL) mp_die("cannot read %s", path);
    char line[kLine];
    int n = 0;
    tune_line_t t;
    *states = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        if (!parse(line, &t)) continue;
        *states |= t.cache > 0 ? 2 : 1;
        *states |= strstr(t.hierarchical, "allreduce") != NULL ? 8 : 4;
        char pair[96];
        snprintf(pair, sizeof pair, "%lld,%.3f,%lld,%s", t.threshold, t.cycle, t.cache,
                 t.hierarchical);
        if ((n == 0 || strcmp(seq[n - 1], pair) != 0) && n < max) strcpy(seq[n++], pair);
    }
    fclose(f);
    return n;
}

/* How many lines of rank 0's log are in `state`. */
static int count_state(const char *log, const char *state) {
    FILE *f = fopen(log, "r");
    if (f == NULL) mp_die("cannot read %s", log);
    char line[kLine];
    int n = 0;
    tune_line_t t;
    while (fgets(line, sizeof line, f) != NULL)
        n += parse_sample(line, &t) && strcmp(t.state, state) == 0;
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
    double mine[3];
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
        static char sampled[128][96], adopted[128][96];
        int states = 0, adopted_states = 0;
        int ns = pair_sequence(log, parse_sample, sampled, 128, &states);
        /* a grid search's point count is its grid's (MP_EXPECT_POINTS) */
        const char *max_points = getenv("MP_EXPECT_POINTS");
        if (max_points == NULL) max_points = getenv("HVD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES");
        /* consecutive points may coincide; the search scores exactly this many */
        if (max_points == NULL || ns < 3 || ns > atoi(max_points) + 1)
            mp_die("rank 0 sampled %d parameter settings, expected %s points", ns,
                   max_points ? max_points : "(unset)");
        if ((states & 3) != 3) mp_die("rank 0 never sampled the cache both on and off");
        const char *hier = getenv("MP_EXPECT_HIERARCHICAL");
        /* switched both ways where the job spans hosts; left on (untuned) elsewhere */
        int hier_states = hier != NULL && strcmp(hier, "1") == 0 ? 12 : 8;
        if ((states & 12) != hier_states)
            mp_die("rank 0 sampled hierarchical allreduce %s, expected %s",
                   (states & 12) == 12 ? "on and off"
                   : (states & 8)      ? "on"
                                       : "off",
                   hier_states == 12 ? "on and off" : "on only");
        /* every point scored counts two samples */
        int scored = count_state(log, "sample");
        if (scored != 2 * atoi(max_points) || count_state(log, "final") != 1)
            mp_die("rank 0 logged %d scored samples and %d final lines for %s points", scored,
                   count_state(log, "final"), max_points);
        char final_choice[96] = "";
        for (int r = 0; r < mp_size; ++r) {
            char path[kLine];
            snprintf(path, sizeof path, "%s.%d", log, r);
            int na = pair_sequence(path, parse_adoption, adopted, 128, &adopted_states);
            /* the same last setting (the final choice) on every rank */
            if (r == 0 && na > 0) strcpy(final_choice, adopted[na - 1]);
            if (na == 0 || strcmp(adopted[na - 1], final_choice) != 0)
                mp_die("rank %d ended with %s, rank 0 with %s", r, na ? adopted[na - 1] : "nothing",
                       final_choice);
            /* the final choice is adopted after the last sampled point */
            if (na != ns && na != ns + 1)
                mp_die("rank %d adopted %d settings, rank 0 sampled %d", r, na, ns);
            for (int i = 0; i < ns; ++i)
                if (strcmp(sampled[i], adopted[i]) != 0)
                    mp_die("rank %d's setting %d is %s, rank 0 sampled %s", r, i, adopted[i],
                           sampled[i]);
        }
    }
    printf(
        "rank %d: autotune ok after %d steps: fusion threshold %.0f bytes, cycle time %.3f ms, "
        "cache capacity %.0f\n",
        mp_rank, step, mine[0], mine[1], mine[2]);
    mp_finalize();
    return 0;
}
