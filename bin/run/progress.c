/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * progress.c: what runs beside the main thread while it waits for a batch:
 * the progress bar on a terminal, and SIGINT's thread, which cancels the
 * batches being waited for (the first SIGINT) or quits (the second).
 */
#include "config.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "run/run.h"

/* Set by the first SIGINT: the batches in flight are canceled (they stop at
 * their next chunk) and no further batch is submitted. */
atomic_int interrupted;

/* The batches the main thread waits for, which the first SIGINT cancels. */
static pthread_mutex_t watch_lock = PTHREAD_MUTEX_INITIALIZER;
static mgpu_event_t *const *watched;
static size_t nwatched;

/* Watch ev[0..n) (NULL, 0: none; before the events are released). A SIGINT
 * that came before the call cancels them at once. */
void watch_events(mgpu_event_t *const *ev, size_t n) {
  pthread_mutex_lock(&watch_lock);
  watched = ev;
  nwatched = n;
  for (size_t i = 0; i < n && atomic_load(&interrupted); i++) mgpu_event_cancel(ev[i]);
  pthread_mutex_unlock(&watch_lock);
}

/* The batch being waited for, for the progress thread. The main thread sets
 * and clears it under the lock, so the event is never released while read. */
static pthread_mutex_t progress_lock = PTHREAD_MUTEX_INITIALIZER;
static mgpu_event_t *progress_ev;
static char progress_what[96]; /* which run: "mode steal, timed run 2 of 3" */
static double progress_t0;
static int progress_shown, progress_stop;

double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Name the run that the bar shows: "mode steal, timed run 2 of 3". */
void progress_label(const char *mode, const char *what, int k, int n) {
  pthread_mutex_lock(&progress_lock);
  snprintf(progress_what, sizeof progress_what, "mode %s, %s %d of %d", mode, what, k, n);
  pthread_mutex_unlock(&progress_lock);
}

/* Draws "[#####.....]  45%  1.2e+06 items/s  3 s left" on stderr for batches
 * that have run for a second; progress_end erases it when the batch ends. */
static void *progress_main(void *arg) {
  (void)arg;
  for (;;) {
    struct timespec ts = {0, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
    pthread_mutex_lock(&progress_lock);
    if (progress_stop) {
      pthread_mutex_unlock(&progress_lock);
      return NULL;
    }
    size_t done = 0, total = 0;
    double el = now_s() - progress_t0;
    if (progress_ev && el > 1.0 && mgpu_event_progress(progress_ev, &done, &total) == MGPU_OK && total) {
      double frac = (double)done / (double)total, rate = (double)done / el;
      char bar[31];
      int fill = (int)(frac * 30);
      for (int i = 0; i < 30; i++) bar[i] = i < fill ? '#' : '.';
      bar[30] = '\0';
      fprintf(stderr, "\r%s [%s] %3.0f%%  %.3g items/s  ", progress_what, bar, 100 * frac, rate);
      if (rate > 0) fprintf(stderr, "%.0f s left ", (double)(total - done) / rate);
      else fprintf(stderr, "             ");
      fflush(stderr);
      progress_shown = 1;
    }
    pthread_mutex_unlock(&progress_lock);
  }
}

void progress_begin(mgpu_event_t *ev) {
  pthread_mutex_lock(&progress_lock);
  progress_ev = ev;
  progress_t0 = now_s();
  pthread_mutex_unlock(&progress_lock);
}

void progress_end(void) {
  pthread_mutex_lock(&progress_lock);
  progress_ev = NULL;
  if (progress_shown) fputs("\r\033[K", stderr);
  progress_shown = 0;
  pthread_mutex_unlock(&progress_lock);
}


static pthread_t progress_thread;
static bool progress_running;

/* A progress bar only for a person watching a terminal; true when started. */
bool progress_start(const opts_t *o) {
  progress_running = !o->quiet && !o->json && isatty(STDERR_FILENO) &&
                     pthread_create(&progress_thread, NULL, progress_main, NULL) == 0;
  return progress_running;
}

void progress_finish(void) {
  if (!progress_running) return;
  pthread_mutex_lock(&progress_lock);
  progress_stop = 1;
  pthread_mutex_unlock(&progress_lock);
  pthread_join(progress_thread, NULL);
  progress_running = false;
}

/* A run's batch that SIGINT canceled: says what it had done; true when so. */
bool canceled(mgpu_status_t s, size_t computed, size_t n) {
  if (!atomic_load(&interrupted) || (s != MGPU_ECANCELED && s != MGPU_EDEP)) return false;
  pthread_mutex_lock(&progress_lock);
  fprintf(stderr, "%s: interrupted in %s: %zu of %zu items computed, the run not counted\n", prog, progress_what,
          computed, n);
  pthread_mutex_unlock(&progress_lock);
  return true;
}

/* SIGINT is blocked in every thread and taken here, where the library may be
 * called: the first cancels the batches in flight (each stops at its next
 * chunk), the second ends the process at once. */
static void *sigint_main(void *arg) {
  const sigset_t *set = arg;
  for (;;) {
    int sig;
    if (sigwait(set, &sig) != 0) continue;
    if (atomic_exchange(&interrupted, 1)) _exit(130);
    static const char msg[] = "\nmgpu-run: SIGINT: stopping at the next chunk (again to quit now)\n";
    ssize_t rc = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)rc;
    pthread_mutex_lock(&watch_lock);
    for (size_t i = 0; i < nwatched; i++) mgpu_event_cancel(watched[i]);
    pthread_mutex_unlock(&watch_lock);
  }
  return NULL;
}

/* Block SIGINT and take it in a thread of its own; before any runtime starts,
 * so that its threads inherit the blocked signal. */
int sigint_start(void) {
  static sigset_t sigint_set;
  sigemptyset(&sigint_set);
  sigaddset(&sigint_set, SIGINT);
  pthread_t sigint_thread;
  if (pthread_sigmask(SIG_BLOCK, &sigint_set, NULL) != 0 ||
      pthread_create(&sigint_thread, NULL, sigint_main, &sigint_set) != 0) {
    fprintf(stderr, "%s: cannot start the SIGINT thread\n", prog);
    return -1;
  }
  pthread_detach(sigint_thread);
  return 0;
}
