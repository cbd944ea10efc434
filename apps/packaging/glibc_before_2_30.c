/* The wheel's programs and library run on glibc 2.28 (RHEL 8), but the compiler they are
   built with (bullseye's g++ 10, on glibc 2.31) makes std::condition_variable's waits on
   steady_clock call pthread_cond_clockwait, which glibc has only since 2.30. This
   definition, linked into the wheel's ELF files alone (apps/packaging/wheel_dependencies.cmake),
   takes the place of glibc's: it turns the deadline on CLOCK into one on the realtime clock
   for pthread_cond_timedwait, as libstdc++ itself did before g++ 10. A wait then ends late
   or early by any step of the wall clock during it; the callers in libstdc++ look at their
   own clock again after every wake-up, so they only wake once more or wait a little long. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <time.h>

enum { kNanosecondsPerSecond = 1000000000 };

int pthread_cond_clockwait(pthread_cond_t* condition, pthread_mutex_t* mutex, clockid_t clock,
                           const struct timespec* deadline) {
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
