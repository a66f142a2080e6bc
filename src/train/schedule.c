/* schedule.c — the learning-rate schedule, written as the formula in schedule.h so
 * that the reference (tests/cli/train_ref.py) and this agree to the last bit that
 * libm gives. */
#include "src/train/schedule.h"

#include <math.h>

double sched_lr(const struct sched *s, int64_t step)
{
	if (step < s->warmup)
		return (double)step / (double)s->warmup * s->lr;
	if (step > s->cosine_steps)
		return s->min_lr;
	if (s->cosine_steps == s->warmup) /* a decay of no length: 0/0, taken as its start */
		return s->lr;
	double ratio = (double)(step - s->warmup) / (double)(s->cosine_steps - s->warmup);
	return s->min_lr + 0.5 * (1.0 + cos(M_PI * ratio)) * (s->lr - s->min_lr);
}

int64_t sched_due_after(int64_t s, int64_t steps, int64_t every)
{
	return steps / every - s / every + (steps % every != 0 && s < steps);
}
