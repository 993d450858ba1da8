/* The C API from C: run by tests/c_api.rs (linked statically and dynamically).
 * Exits 0 when every check holds; prints the failed check and exits 1 otherwise. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rangelock.h"

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);     \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

/* A call that must return `want`; prints both statuses otherwise. */
#define CHECK_STATUS(call, want)                                                         \
    do {                                                                                 \
        int got_ = (call);                                                               \
        if (got_ != (want)) {                                                            \
            fprintf(stderr, "%s:%d: %s returned %d (%s), expected %d (%s)\n", __FILE__,  \
                    __LINE__, #call, got_, rl_status_str(got_), (int)(want),             \
                    rl_status_str(want));                                                \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

static rl_guard_t *const NOT_WRITTEN = (rl_guard_t *)&NOT_WRITTEN;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void test_exclusion(void) {
    rl_lock_t *lock = rl_lock_new();
    CHECK(lock != NULL);
    rl_guard_t *a = NULL, *b = NULL, *c = NOT_WRITTEN;
    CHECK_STATUS(rl_try_lock(lock, 0, 100, RL_EXCLUSIVE, &a), RL_OK);
    CHECK(a != NULL);
    uint64_t start = 1, end = 1;
    CHECK_STATUS(rl_guard_range(a, &start, &end), RL_OK);
    CHECK(start == 0 && end == 100);
    CHECK_STATUS(rl_try_lock(lock, 50, 150, RL_EXCLUSIVE, &c), RL_WOULD_BLOCK);
    CHECK(c == NULL); /* failures clear *out */
    CHECK_STATUS(rl_try_lock(lock, 99, 100, RL_SHARED, &c), RL_WOULD_BLOCK);
    CHECK_STATUS(rl_try_lock(lock, 100, 200, RL_EXCLUSIVE, &b), RL_OK); /* adjacent */
    CHECK_STATUS(rl_unlock(a), RL_OK);
    CHECK_STATUS(rl_try_lock(lock, 50, 100, RL_EXCLUSIVE, &c), RL_OK);
    CHECK_STATUS(rl_unlock(b), RL_OK);
    CHECK_STATUS(rl_unlock(c), RL_OK);
    CHECK_STATUS(rl_lock_free(lock), RL_OK);
}

static void test_shared(void) {
    rl_lock_t *lock = rl_lock_new();
    rl_guard_t *r1, *r2, *w = NOT_WRITTEN;
    CHECK_STATUS(rl_lock(lock, 0, 100, RL_SHARED, &r1), RL_OK);
    CHECK_STATUS(rl_try_lock(lock, 50, 150, RL_SHARED, &r2), RL_OK);
    CHECK_STATUS(rl_try_lock(lock, 60, 70, RL_EXCLUSIVE, &w), RL_WOULD_BLOCK);
    CHECK(w == NULL);
    CHECK_STATUS(rl_unlock(r1), RL_OK);
    CHECK_STATUS(rl_try_lock(lock, 60, 70, RL_EXCLUSIVE, &w), RL_WOULD_BLOCK); /* r2 */
    CHECK_STATUS(rl_try_lock(lock, 0, 50, RL_EXCLUSIVE, &w), RL_OK);
    CHECK_STATUS(rl_unlock(w), RL_OK);
    CHECK_STATUS(rl_unlock(r2), RL_OK);
    CHECK_STATUS(rl_try_lock(lock, 60, 70, RL_EXCLUSIVE, &w), RL_OK);
    CHECK_STATUS(rl_unlock(w), RL_OK);
    CHECK_STATUS(rl_lock_free(lock), RL_OK);
}

static void test_timeout(void) {
    rl_lock_t *lock = rl_lock_new();
    rl_guard_t *held, *g = NOT_WRITTEN;
    CHECK_STATUS(rl_lock(lock, 0, 10, RL_EXCLUSIVE, &held), RL_OK);
    const uint64_t timeout_ms = 20;
    double started = now_ms();
    CHECK_STATUS(rl_lock_timeout(lock, 5, 6, RL_EXCLUSIVE, timeout_ms * 1000000, &g),
                 RL_TIMED_OUT);
    CHECK(now_ms() - started >= (double)timeout_ms); /* it did wait */
    CHECK(g == NULL);
    CHECK_STATUS(rl_lock_timeout(lock, 9, 11, RL_SHARED, 0, &g), RL_TIMED_OUT);
    CHECK_STATUS(rl_lock_timeout(lock, 10, 20, RL_SHARED, 0, &g), RL_OK);
    CHECK_STATUS(rl_unlock(g), RL_OK);
    CHECK_STATUS(rl_unlock(held), RL_OK);
    CHECK_STATUS(rl_lock_timeout(lock, 5, 6, RL_EXCLUSIVE, UINT64_MAX, &g), RL_OK);
    CHECK_STATUS(rl_unlock(g), RL_OK);
    CHECK_STATUS(rl_lock_free(lock), RL_OK);
}

static void test_invalid_arguments(void) {
    rl_lock_t *lock = rl_lock_new();
    rl_guard_t *g = NOT_WRITTEN;
    CHECK_STATUS(rl_lock(lock, 5, 5, RL_EXCLUSIVE, &g), RL_INVALID_RANGE);
    CHECK(g == NULL);
    CHECK_STATUS(rl_try_lock(lock, 6, 5, RL_SHARED, &g), RL_INVALID_RANGE);
    CHECK_STATUS(rl_lock_timeout(lock, UINT64_MAX, 0, RL_EXCLUSIVE, 0, &g), RL_INVALID_RANGE);
    CHECK_STATUS(rl_try_lock(lock, 0, 1, 2, &g), RL_INVALID_MODE);
    CHECK_STATUS(rl_lock(lock, 0, 1, -1, &g), RL_INVALID_MODE);

    g = NOT_WRITTEN;
    CHECK_STATUS(rl_lock(NULL, 0, 1, RL_EXCLUSIVE, &g), RL_NULL_ARGUMENT);
    CHECK(g == NULL);
    CHECK_STATUS(rl_try_lock(NULL, 0, 1, RL_EXCLUSIVE, &g), RL_NULL_ARGUMENT);
    CHECK_STATUS(rl_lock_timeout(NULL, 0, 1, RL_EXCLUSIVE, 0, &g), RL_NULL_ARGUMENT);
    CHECK_STATUS(rl_lock(lock, 0, 1, RL_EXCLUSIVE, NULL), RL_NULL_ARGUMENT);
    CHECK_STATUS(rl_try_lock(lock, 0, 1, RL_EXCLUSIVE, NULL), RL_NULL_ARGUMENT);
    CHECK_STATUS(rl_lock_timeout(lock, 0, 1, RL_EXCLUSIVE, 0, NULL), RL_NULL_ARGUMENT);
    CHECK_STATUS(rl_unlock(NULL), RL_NULL_ARGUMENT);
    CHECK_STATUS(rl_lock_free(NULL), RL_NULL_ARGUMENT);
    uint64_t start, end;
    CHECK_STATUS(rl_guard_range(NULL, &start, &end), RL_NULL_ARGUMENT);
    /* None of the calls above locked anything. */
    CHECK_STATUS(rl_try_lock(lock, 0, UINT64_MAX, RL_EXCLUSIVE, &g), RL_OK);
    CHECK_STATUS(rl_guard_range(g, NULL, &end), RL_NULL_ARGUMENT);
    CHECK_STATUS(rl_unlock(g), RL_OK);

    CHECK(strcmp(rl_status_str(RL_WOULD_BLOCK), rl_status_str(RL_OK)) != 0);
    CHECK(strcmp(rl_status_str(12345), "unknown rangelock status") == 0);
    CHECK_STATUS(rl_lock_free(lock), RL_OK);
}

static void test_free_with_held_ranges(void) {
    rl_lock_t *lock = rl_lock_new();
    rl_guard_t *g;
    CHECK_STATUS(rl_lock(lock, 7, 8, RL_SHARED, &g), RL_OK);
    CHECK_STATUS(rl_lock_free(lock), RL_BUSY);
    CHECK_STATUS(rl_unlock(g), RL_OK); /* the lock survived */
    CHECK_STATUS(rl_lock_free(lock), RL_OK);
}

/* ---- unlocking from another thread ---- */

static void *unlock_thread(void *guard) {
    return (void *)(intptr_t)rl_unlock((rl_guard_t *)guard);
}

static void test_unlock_from_another_thread(void) {
    rl_lock_t *lock = rl_lock_new();
    rl_guard_t *g;
    CHECK_STATUS(rl_lock(lock, 0, 64, RL_EXCLUSIVE, &g), RL_OK);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, unlock_thread, g) == 0);
    void *status;
    CHECK(pthread_join(t, &status) == 0);
    CHECK_STATUS((int)(intptr_t)status, RL_OK);
    CHECK_STATUS(rl_try_lock(lock, 0, 64, RL_EXCLUSIVE, &g), RL_OK);
    CHECK_STATUS(rl_unlock(g), RL_OK);
    CHECK_STATUS(rl_lock_free(lock), RL_OK);
}

/* ---- the multithreaded checker ----
 * Writers lock random ranges of a small array exclusively, write their id over the range,
 * yield, and check that the range still holds their id. Readers lock random ranges shared
 * and check that the range does not change while they hold it. The cells are relaxed
 * atomics, so a broken lock shows up as a mismatch rather than as a data race. */

enum { CELLS = 48, WRITERS = 6, READERS = 2, ROUNDS = 3000, MAX_LEN = 8 };

static _Atomic int cells[CELLS];
static atomic_int mismatches;
static atomic_long exclusive_rounds;

struct worker {
    rl_lock_t *lock;
    int id;
    unsigned seed;
};

static void random_range(unsigned *seed, uint64_t *start, uint64_t *end) {
    *start = (uint64_t)(rand_r(seed) % CELLS);
    uint64_t room = CELLS - *start;
    *end = *start + 1 + (uint64_t)rand_r(seed) % (room < MAX_LEN ? room : MAX_LEN);
}

static void *writer(void *arg) {
    struct worker *w = arg;
    for (int round = 0; round < ROUNDS; round++) {
        uint64_t start, end;
        random_range(&w->seed, &start, &end);
        rl_guard_t *g;
        if (rl_lock(w->lock, start, end, RL_EXCLUSIVE, &g) != RL_OK) {
            atomic_fetch_add(&mismatches, 1);
            return NULL;
        }
        for (uint64_t i = start; i < end; i++)
            atomic_store_explicit(&cells[i], w->id, memory_order_relaxed);
        sched_yield(); /* widen the window in which an overlapping holder would show */
        for (uint64_t i = start; i < end; i++)
            if (atomic_load_explicit(&cells[i], memory_order_relaxed) != w->id)
                atomic_fetch_add(&mismatches, 1);
        atomic_fetch_add(&exclusive_rounds, 1);
        if (rl_unlock(g) != RL_OK)
            atomic_fetch_add(&mismatches, 1);
    }
    return NULL;
}

static void *reader(void *arg) {
    struct worker *w = arg;
    int seen[MAX_LEN];
    for (int round = 0; round < ROUNDS; round++) {
        uint64_t start, end;
        random_range(&w->seed, &start, &end);
        rl_guard_t *g;
        if (rl_lock(w->lock, start, end, RL_SHARED, &g) != RL_OK) {
            atomic_fetch_add(&mismatches, 1);
            return NULL;
        }
        for (uint64_t i = start; i < end; i++)
            seen[i - start] = atomic_load_explicit(&cells[i], memory_order_relaxed);
        sched_yield();
        for (uint64_t i = start; i < end; i++)
            if (atomic_load_explicit(&cells[i], memory_order_relaxed) != seen[i - start])
                atomic_fetch_add(&mismatches, 1);
        if (rl_unlock(g) != RL_OK)
            atomic_fetch_add(&mismatches, 1);
    }
    return NULL;
}

static void test_threads_exclude_each_other(void) {
    rl_lock_t *lock = rl_lock_new();
    pthread_t threads[WRITERS + READERS];
    struct worker workers[WRITERS + READERS];
    for (int i = 0; i < WRITERS + READERS; i++) {
        workers[i] = (struct worker){lock, i + 1, 0x9e3779b9u * (unsigned)(i + 1)};
        CHECK(pthread_create(&threads[i], NULL, i < WRITERS ? writer : reader, &workers[i]) ==
              0);
    }
    for (int i = 0; i < WRITERS + READERS; i++)
        CHECK(pthread_join(threads[i], NULL) == 0);
    int bad = atomic_load(&mismatches);
    if (bad != 0)
        fprintf(stderr, "checker: %d mismatches: overlapping holders were inside together\n",
                bad);
    CHECK(bad == 0);
    CHECK(atomic_load(&exclusive_rounds) == (long)WRITERS * ROUNDS);
    CHECK_STATUS(rl_lock_free(lock), RL_OK);
}

static void test_lock_many_and_downgrade(void) {
    rl_lock_t *lock = rl_lock_new();
    rl_guard_t *all = NOT_WRITTEN, *g = NOT_WRITTEN;
    const rl_range_t request[] = {{100, 200, RL_EXCLUSIVE}, {0, 50, RL_SHARED}};
    CHECK_STATUS(rl_lock_many(lock, request, 2, &all), RL_OK);
    uint64_t start = 1, end = 1;
    CHECK_STATUS(rl_guard_range(all, &start, &end), RL_OK);
    CHECK(start == 0 && end == 200); /* the covering range */
    CHECK_STATUS(rl_try_lock(lock, 150, 151, RL_SHARED, &g), RL_WOULD_BLOCK);
    CHECK_STATUS(rl_try_lock(lock, 10, 20, RL_SHARED, &g), RL_OK);
    CHECK_STATUS(rl_unlock(g), RL_OK);
    /* all or nothing: [100, 200) is held, so [60, 70) stays free */
    const rl_range_t blocked[] = {{60, 70, RL_EXCLUSIVE}, {150, 160, RL_EXCLUSIVE}};
    CHECK_STATUS(rl_try_lock_many(lock, blocked, 2, &g), RL_WOULD_BLOCK);
    CHECK(g == NULL);
    CHECK_STATUS(rl_lock_many_timeout(lock, blocked, 2, 1000000, &g), RL_TIMED_OUT);
    CHECK_STATUS(rl_try_lock(lock, 60, 70, RL_EXCLUSIVE, &g), RL_OK);
    CHECK_STATUS(rl_unlock(g), RL_OK);
    const rl_range_t overlapping[] = {{0, 10, RL_SHARED}, {5, 15, RL_SHARED}};
    CHECK_STATUS(rl_try_lock_many(lock, overlapping, 2, &g), RL_OVERLAPPING);
    /* downgrade: readers join [100, 200), writers still wait */
    CHECK_STATUS(rl_downgrade(all), RL_OK);
    CHECK_STATUS(rl_try_lock(lock, 150, 151, RL_SHARED, &g), RL_OK);
    CHECK_STATUS(rl_unlock(g), RL_OK);
    CHECK_STATUS(rl_try_lock(lock, 150, 151, RL_EXCLUSIVE, &g), RL_WOULD_BLOCK);
    CHECK_STATUS(rl_unlock(all), RL_OK);
    CHECK_STATUS(rl_lock_free(lock), RL_OK);
}

static void test_version(void) {
    char header[32];
    snprintf(header, sizeof header, "%d.%d.%d", RL_VERSION_MAJOR, RL_VERSION_MINOR,
             RL_VERSION_PATCH);
    CHECK(strcmp(rl_version(), header) == 0);
    CHECK(rl_version_number() == RL_VERSION_NUMBER);
}

int main(void) {
    test_exclusion();
    test_shared();
    test_timeout();
    test_invalid_arguments();
    test_free_with_held_ranges();
    test_unlock_from_another_thread();
    test_threads_exclude_each_other();
    test_lock_many_and_downgrade();
    test_version();
    printf("test_rangelock.c: all checks passed\n");
    return 0;
}
