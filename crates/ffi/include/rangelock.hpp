// rangelock.hpp: a C++17 RAII wrapper over the C API in rangelock.h.
//
//   rangelock::Lock lock;                              // owns an rl_lock_t
//   {
//       rangelock::Guard page = lock.lock(4096, 8192); // exclusive, waits
//       if (auto g = lock.try_lock(0, 4096, rangelock::Mode::Shared)) { ... }
//       rangelock::Guard both = lock.lock_many({{0, 10}, {20, 30, rangelock::Mode::Shared}});
//       page.downgrade();                              // now shared
//   }                                                  // the guards unlock here
//
// Needs C++17 (std::optional); an older standard stops at the #error below. From C, or
// from C++11/14, use the C API in rangelock.h.
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

#ifndef __cplusplus
#error "rangelock.hpp is C++; from C, include rangelock.h"
#endif
// MSVC keeps __cplusplus at 199711L unless /Zc:__cplusplus is given; _MSVC_LANG is right.
#if defined(_MSVC_LANG)
#define RANGELOCK_CPLUSPLUS _MSVC_LANG
#else
#define RANGELOCK_CPLUSPLUS __cplusplus
#endif
#if RANGELOCK_CPLUSPLUS < 201703L
#error "rangelock.hpp needs C++17 or later (-std=c++17, /std:c++17); from older C++, use rangelock.h"
#endif
#undef RANGELOCK_CPLUSPLUS

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "rangelock.h"

namespace rangelock {

/// How a range is held.
enum class Mode : int {
    Exclusive = RL_EXCLUSIVE,  ///< excludes every overlapping holder
    Shared = RL_SHARED,        ///< overlaps other shared holders
};

/// The version of the library that runs, e.g. "0.1.0" (RL_VERSION_* name the header's).
inline const char *version() noexcept { return rl_version(); }

/// One range of a lock_many request: [start, end) in `mode`.
struct Range {
    std::uint64_t start;
    std::uint64_t end;
    Mode mode = Mode::Exclusive;
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

    /// Turns the exclusive ranges of this guard shared, in place (no writer can get in
    /// between; readers may join). Throws Error (RL_NULL_ARGUMENT) if nothing is held.
    void downgrade() {
        int status = rl_downgrade(handle_);
        if (status != RL_OK) throw Error(status);
    }

    /// Whether this guard holds a range.
    bool owns() const noexcept { return handle_ != nullptr; }
    explicit operator bool() const noexcept { return owns(); }

    /// The held range [start, end) (for lock_many, the smallest range covering them all);
    /// throws Error (RL_NULL_ARGUMENT) if nothing is held.
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
        rl_guard_t *handle = nullptr;
        int status = rl_lock_timeout(lock_, start, end, static_cast<int>(mode),
                                     nanoseconds(timeout), &handle);
        if (status == RL_TIMED_OUT) return std::nullopt;
        check(status);
        return Guard(handle);
    }

    /// Locks every range of `request` in its mode, all or nothing, waiting as long as it
    /// takes; the one Guard releases them all. Ranges may come in any order and must not
    /// overlap (Error with RL_OVERLAPPING). Cannot deadlock with other callers as long as
    /// this thread holds no other range of the lock (rangelock.h, rl_lock_many).
    Guard lock_many(const std::vector<Range> &request) {
        std::vector<rl_range_t> ranges = to_c(request);
        rl_guard_t *handle = nullptr;
        check(rl_lock_many(lock_, ranges.data(), ranges.size(), &handle));
        return Guard(handle);
    }

    /// lock_many if none of the ranges conflicts with a holder now; empty otherwise.
    std::optional<Guard> try_lock_many(const std::vector<Range> &request) {
        std::vector<rl_range_t> ranges = to_c(request);
        rl_guard_t *handle = nullptr;
        int status = rl_try_lock_many(lock_, ranges.data(), ranges.size(), &handle);
        if (status == RL_WOULD_BLOCK) return std::nullopt;
        check(status);
        return Guard(handle);
    }

    /// lock_many waiting at most `timeout` (as in try_lock_for); empty if it expired.
    template <class Rep, class Period>
    std::optional<Guard> try_lock_many_for(const std::vector<Range> &request,
                                           std::chrono::duration<Rep, Period> timeout) {
        std::vector<rl_range_t> ranges = to_c(request);
        rl_guard_t *handle = nullptr;
        int status = rl_lock_many_timeout(lock_, ranges.data(), ranges.size(),
                                          nanoseconds(timeout), &handle);
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

    // A timeout in nanoseconds; negative counts as 0.
    template <class Rep, class Period>
    static std::uint64_t nanoseconds(std::chrono::duration<Rep, Period> timeout) {
        auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count();
        return ns < 0 ? 0 : static_cast<std::uint64_t>(ns);
    }

    static std::vector<rl_range_t> to_c(const std::vector<Range> &request) {
        std::vector<rl_range_t> ranges;
        ranges.reserve(request.size());
        for (const Range &r : request)
            ranges.push_back(rl_range_t{r.start, r.end, static_cast<int>(r.mode)});
        return ranges;
    }

    void release_lock() noexcept {
        // RL_BUSY: a guard still holds a range; leaking keeps that guard valid.
        if (lock_ != nullptr) rl_lock_free(std::exchange(lock_, nullptr));
    }

    rl_lock_t *lock_;
};

}  // namespace rangelock

#endif  // RANGELOCK_HPP
