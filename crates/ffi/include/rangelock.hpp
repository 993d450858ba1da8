// rangelock.hpp: a C++17 RAII wrapper over the C API in rangelock.h.
//
//   rangelock::Lock lock;                              // owns an rl_lock_t
//   {
//       rangelock::Guard page = lock.lock(4096, 8192); // exclusive, waits
//       if (auto g = lock.try_lock(0, 4096, rangelock::Mode::Shared)) { ... }
//   }                                                  // the guards unlock here
//
// Errors: an invalid range or mode throws rangelock::Error (a std::runtime_error carrying
// the rl_status); a range that is busy (try_lock) or not free in time (try_lock_for) is an
// empty std::optional, not an exception. Guards are move-only and unlock in their
// destructor; a Lock is move-only too (moving it does not move the lock in memory, so its
// guards stay valid).
//
// Lifetime: destroy (or unlock) every Guard before its Lock. If a Lock is destroyed while
// one of its guards still holds a range, rl_lock_free refuses and the Lock leaks the
// underlying lock instead of freeing it, so the guard stays valid (no undefined
// behaviour; the memory is lost). Threads: as in rangelock.h; a Lock may be shared by
// reference among threads, and a Guard may be moved to another thread and unlocked there.
#ifndef RANGELOCK_HPP
#define RANGELOCK_HPP

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "rangelock.h"

namespace rangelock {

/// How a range is held.
enum class Mode : int {
    Exclusive = RL_EXCLUSIVE,  ///< excludes every overlapping holder
    Shared = RL_SHARED,        ///< overlaps other shared holders
};

/// A status other than RL_OK where the call cannot answer with an empty optional.
class Error : public std::runtime_error {
public:
    explicit Error(int status)
        : std::runtime_error(std::string("rangelock: ") + rl_status_str(status)),
          status_(status) {}

    /// The rl_status the C API returned.
    int status() const noexcept { return status_; }

private:
    int status_;
};

/// A held range: unlocks in its destructor. Move-only; a moved-from Guard holds nothing.
class Guard {
public:
    /// A guard that holds nothing.
    Guard() noexcept = default;

    /// Takes ownership of a handle from rl_lock / rl_try_lock / rl_lock_timeout.
    explicit Guard(rl_guard_t *handle) noexcept : handle_(handle) {}

    Guard(const Guard &) = delete;
    Guard &operator=(const Guard &) = delete;

    Guard(Guard &&other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}

    Guard &operator=(Guard &&other) noexcept {
        if (this != &other) {
            unlock();
            handle_ = std::exchange(other.handle_, nullptr);
        }
        return *this;
    }

    ~Guard() { unlock(); }

    /// Unlocks now (a no-op if nothing is held).
    void unlock() noexcept {
        // rl_unlock cannot fail for a live handle; RL_PANIC would mean a bug in the library.
        if (handle_ != nullptr) rl_unlock(std::exchange(handle_, nullptr));
    }

    /// Whether this guard holds a range.
    bool owns() const noexcept { return handle_ != nullptr; }
    explicit operator bool() const noexcept { return owns(); }

    /// The held range [start, end); throws Error (RL_NULL_ARGUMENT) if nothing is held.
    std::pair<std::uint64_t, std::uint64_t> range() const {
        std::uint64_t start = 0, end = 0;
        int status = rl_guard_range(handle_, &start, &end);
        if (status != RL_OK) throw Error(status);
        return {start, end};
    }

    /// Gives up ownership: the caller must rl_unlock the handle.
    rl_guard_t *release() noexcept { return std::exchange(handle_, nullptr); }

private:
    rl_guard_t *handle_ = nullptr;
};

/// A range lock (owns an rl_lock_t). Move-only; a moved-from Lock holds no lock and its
/// lock calls throw Error (RL_NULL_ARGUMENT).
class Lock {
public:
    /// Makes a lock; throws Error (RL_PANIC) if the library failed to.
    Lock() : lock_(rl_lock_new()) {
        if (lock_ == nullptr) throw Error(RL_PANIC);
    }

    Lock(const Lock &) = delete;
    Lock &operator=(const Lock &) = delete;

    Lock(Lock &&other) noexcept : lock_(std::exchange(other.lock_, nullptr)) {}

    Lock &operator=(Lock &&other) noexcept {
        if (this != &other) {
            release_lock();
            lock_ = std::exchange(other.lock_, nullptr);
        }
        return *this;
    }

    /// Frees the lock, or leaks it if a guard still holds a range (see the top of the file).
    ~Lock() { release_lock(); }

    /// Locks [start, end) in `mode`, waiting as long as it takes.
    Guard lock(std::uint64_t start, std::uint64_t end, Mode mode = Mode::Exclusive) {
        rl_guard_t *handle = nullptr;
        check(rl_lock(lock_, start, end, static_cast<int>(mode), &handle));
        return Guard(handle);
    }

    /// Locks [start, end) shared, waiting as long as it takes.
    Guard lock_shared(std::uint64_t start, std::uint64_t end) {
        return lock(start, end, Mode::Shared);
    }

    /// Locks [start, end) in `mode` if no incompatible holder overlaps it now; empty if one
    /// does.
    std::optional<Guard> try_lock(std::uint64_t start, std::uint64_t end,
                                  Mode mode = Mode::Exclusive) {
        rl_guard_t *handle = nullptr;
        int status = rl_try_lock(lock_, start, end, static_cast<int>(mode), &handle);
        if (status == RL_WOULD_BLOCK) return std::nullopt;
        check(status);
        return Guard(handle);
    }

    /// Locks [start, end) in `mode`, waiting at most `timeout`; empty if it expired.
    /// Negative timeouts count as 0; `timeout` must fit std::chrono::nanoseconds (292
    /// years), use lock() to wait without a limit.
    template <class Rep, class Period>
    std::optional<Guard> try_lock_for(std::uint64_t start, std::uint64_t end,
                                      std::chrono::duration<Rep, Period> timeout,
                                      Mode mode = Mode::Exclusive) {
        auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count();
        std::uint64_t timeout_ns = ns < 0 ? 0 : static_cast<std::uint64_t>(ns);
        rl_guard_t *handle = nullptr;
        int status =
            rl_lock_timeout(lock_, start, end, static_cast<int>(mode), timeout_ns, &handle);
        if (status == RL_TIMED_OUT) return std::nullopt;
        check(status);
        return Guard(handle);
    }

    /// The C handle, for calls this wrapper does not cover.
    rl_lock_t *native_handle() const noexcept { return lock_; }

private:
    static void check(int status) {
        if (status != RL_OK) throw Error(status);
    }

    void release_lock() noexcept {
        // RL_BUSY: a guard still holds a range; leaking keeps that guard valid.
        if (lock_ != nullptr) rl_lock_free(std::exchange(lock_, nullptr));
    }

    rl_lock_t *lock_;
};

}  // namespace rangelock

#endif  // RANGELOCK_HPP
