// The C++ RAII wrapper (rangelock.hpp): run by tests/c_api.rs.
// Exits 0 when every check holds; prints the failed check and exits 1 otherwise.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>

#include "rangelock.hpp"

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            std::exit(1);                                                                \
        }                                                                                \
    } while (0)

using rangelock::Guard;
using rangelock::Lock;
using rangelock::Mode;

static_assert(!std::is_copy_constructible_v<Guard> && std::is_nothrow_move_constructible_v<Guard>);
static_assert(!std::is_copy_constructible_v<Lock> && std::is_nothrow_move_constructible_v<Lock>);

// Whether [start, end) can be locked exclusively right now (and unlocks it again).
static bool is_free(Lock &lock, std::uint64_t start, std::uint64_t end) {
    return lock.try_lock(start, end).has_value();
}

static void test_destructor_unlocks() {
    Lock lock;
    {
        Guard g = lock.lock(0, 100);
        CHECK(g.owns());
        CHECK(!is_free(lock, 50, 60));
    }
    CHECK(is_free(lock, 50, 60));
    {
        std::optional<Guard> g = lock.try_lock(0, 100, Mode::Shared);
        CHECK(g.has_value() && g->owns());
        CHECK(!is_free(lock, 99, 200));
    }
    CHECK(is_free(lock, 99, 200));
}

static void test_moves_transfer_ownership() {
    Lock lock;
    Guard outer;
    CHECK(!outer);
    {
        Guard inner = lock.lock(10, 20);
        auto [start, end] = inner.range();
        CHECK(start == 10 && end == 20);
        Guard moved(std::move(inner));
        CHECK(!inner.owns() && moved.owns());  // NOLINT(bugprone-use-after-move)
        outer = std::move(moved);
        CHECK(!moved.owns() && outer.owns());  // NOLINT(bugprone-use-after-move)
    }  // inner and moved hold nothing: the range stays locked
    CHECK(!is_free(lock, 15, 16));
    outer = lock.lock(30, 40);  // move-assignment unlocks the old range
    CHECK(is_free(lock, 15, 16));
    CHECK(!is_free(lock, 35, 36));
    outer.unlock();
    outer.unlock();  // a second unlock is a no-op
    CHECK(is_free(lock, 35, 36));

    // A Lock moves without invalidating its guards.
    Guard g = lock.lock(0, 1);
    Lock moved_lock(std::move(lock));
    CHECK(!moved_lock.try_lock(0, 1).has_value());
    g.unlock();
    CHECK(moved_lock.try_lock(0, 1).has_value());
    bool threw = false;
    try {
        (void)lock.try_lock(0, 1);  // NOLINT(bugprone-use-after-move)
    } catch (const rangelock::Error &e) {
        threw = e.status() == RL_NULL_ARGUMENT;
    }
    CHECK(threw);
}

static void test_shared_and_timeouts() {
    Lock lock;
    Guard r1 = lock.lock_shared(0, 100);
    std::optional<Guard> r2 = lock.try_lock(50, 150, Mode::Shared);
    CHECK(r2.has_value());
    auto timeout = std::chrono::milliseconds(20);
    auto started = std::chrono::steady_clock::now();
    CHECK(!lock.try_lock_for(60, 70, timeout).has_value());
    CHECK(std::chrono::steady_clock::now() - started >= timeout);
    CHECK(lock.try_lock_for(60, 70, timeout, Mode::Shared).has_value());
    r1.unlock();
    r2.reset();
    CHECK(lock.try_lock_for(60, 70, std::chrono::seconds(-1)).has_value());
}

static void test_errors_throw() {
    Lock lock;
    int status = RL_OK;
    try {
        (void)lock.lock(5, 5);
    } catch (const rangelock::Error &e) {
        status = e.status();
    }
    CHECK(status == RL_INVALID_RANGE);
    status = RL_OK;
    try {
        (void)lock.try_lock(0, 1, static_cast<Mode>(7));
    } catch (const rangelock::Error &e) {
        status = e.status();
    }
    CHECK(status == RL_INVALID_MODE);
    CHECK(is_free(lock, 0, UINT64_MAX));
}

static void test_guard_unlocked_on_another_thread() {
    Lock lock;
    Guard g = lock.lock(0, 64);
    std::thread([g = std::move(g)]() mutable { g.unlock(); }).join();
    CHECK(is_free(lock, 0, 64));
}

static void test_lock_destroyed_before_its_guard() {
    Guard survivor;
    {
        Lock lock;
        survivor = lock.lock(0, 8);
    }  // rl_lock_free answers RL_BUSY; the lock is leaked, not freed
    CHECK(survivor.owns());
    auto [start, end] = survivor.range();
    CHECK(start == 0 && end == 8);
    survivor.unlock();
}

static void test_lock_many_and_downgrade() {
    Lock lock;
    Guard both = lock.lock_many({{100, 200}, {0, 50, Mode::Shared}});
    auto [start, end] = both.range();
    CHECK(start == 0 && end == 200);
    CHECK(!is_free(lock, 150, 151));
    CHECK(lock.try_lock(10, 20, Mode::Shared).has_value());
    CHECK(!lock.try_lock_many({{60, 70}, {150, 160}}).has_value());
    CHECK(!lock.try_lock_many_for({{60, 70}, {150, 160}}, std::chrono::milliseconds(1)));
    CHECK(is_free(lock, 60, 70));
    int status = RL_OK;
    try {
        (void)lock.lock_many({{0, 10}, {5, 15}});
    } catch (const rangelock::Error &e) {
        status = e.status();
    }
    CHECK(status == RL_OVERLAPPING);
    both.downgrade();
    CHECK(lock.try_lock(150, 151, Mode::Shared).has_value());
    CHECK(!is_free(lock, 150, 151));
    both.unlock();
    CHECK(is_free(lock, 0, 200));
    CHECK(std::string(rangelock::version()) == std::to_string(RL_VERSION_MAJOR) + "." +
                                                   std::to_string(RL_VERSION_MINOR) + "." +
                                                   std::to_string(RL_VERSION_PATCH));
}

int main() {
    test_destructor_unlocks();
    test_moves_transfer_ownership();
    test_shared_and_timeouts();
    test_errors_throw();
    test_guard_unlocked_on_another_thread();
    test_lock_destroyed_before_its_guard();
    test_lock_many_and_downgrade();
    std::printf("test_rangelock.cpp: all checks passed\n");
    return 0;
}
