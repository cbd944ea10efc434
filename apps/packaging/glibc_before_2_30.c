/* The wheel's programs and library run on glibc 2.28 (its manylinux_2_28 tag), but the
   compiler they are built with (bullseye's g++ 10, on glibc 2.31) makes
   std::condition_variable's waits on steady_clock call pthread_cond_clockwait, which glibc
   has only since 2.30. This definition, linked into the wheel's ELF files alone
   (apps/packaging/wheel_dependencies.cmake) and hidden in each, calls glibc's own where the
   system has it (2.30 and later), found at run time; on older glibc it turns the deadline
   on CLOCK into one on the realtime clock for pthread_cond_timedwait, as libstdc++ did
   before g++ 10. There, a step of the wall clock during a wait moves its end by as much
   (setting the clock back makes it end that much later). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <time.h>

enum { kNanosecondsPerSecond = 1000000000 };

typedef int (*ClockWait)(pthread_cond_t*, pthread_mutex_t*, clockid_t, const struct timespec*);

/* glibc's pthread_cond_clockwait, or NULL before glibc 2.30; looked up once. */
static ClockWait systemClockWait(void) {
  static ClockWait found;
  static int looked;
  if (!__atomic_load_n(&looked, __ATOMIC_ACQUIRE)) {
    /* Racing threads find the same function: either store is right. */
    __atomic_store_n(&found, (ClockWait)dlvsym(RTLD_NEXT, "pthread_cond_clockwait", "GLIBC_2.30"), __ATOMIC_RELAXED);
    __atomic_store_n(&looked, 1, __ATOMIC_RELEASE);
  }
  return __atomic_load_n(&found, __ATOMIC_RELAXED);
}

__attribute__((visibility("hidden"))) int pthread_cond_clockwait(pthread_cond_t* condition, pthread_mutex_t* mutex,
                                                                 clockid_t clock, const struct timespec* deadline) {
  ClockWait system = systemClockWait();
  if (system != NULL) return system(condition, mutex, clock, deadline);
  if (clock == CLOCK_REALTIME) return pthread_cond_timedwait(condition, mutex, deadline);
  struct timespec now, realtime;
  if (clock_gettime(clock, &now) != 0 || clock_gettime(CLOCK_REALTIME, &realtime) != 0) return EINVAL;
  long long left =
      (long long)(deadline->tv_sec - now.tv_sec) * kNanosecondsPerSecond + (deadline->tv_nsec - now.tv_nsec);
  if (left < 0) left = 0;
  long long nanoseconds = realtime.tv_nsec + left % kNanosecondsPerSecond;
  struct timespec converted = {
      realtime.tv_sec + (time_t)(left / kNanosecondsPerSecond) + nanoseconds / kNanosecondsPerSecond,
      nanoseconds % kNanosecondsPerSecond};
  return pthread_cond_timedwait(condition, mutex, &converted);
}
