/* schedule.h — the learning rate of each step: a linear warm-up from 0, a cosine
 * decay to min_lr, then min_lr (nanoGPT's get_lr). */
#ifndef QWENCHAT_SCHEDULE_H
#define QWENCHAT_SCHEDULE_H

#include <stdint.h>

struct sched {
	double lr, min_lr;    /* the peak and the floor */
	int64_t warmup;       /* steps of the linear ramp (0: none) */
	int64_t cosine_steps; /* where the cosine reaches min_lr; >= warmup */
};

/* The rate of step s (s = 0, 1, ...):
 *   s < warmup:                  s / warmup * lr
 *   warmup <= s <= cosine_steps: min_lr + 0.5 (1 + cos(pi (s - warmup) /
 *                                (cosine_steps - warmup))) (lr - min_lr)
 *                                (lr itself when cosine_steps == warmup)
 *   s > cosine_steps:            min_lr */
double sched_lr(const struct sched *s, int64_t step);

/* The steps after s up to the run's end (steps) that are multiples of `every`, or the
 * end itself: the evaluations or saves still due once step s is done. */
int64_t sched_due_after(int64_t s, int64_t steps, int64_t every);

#endif
