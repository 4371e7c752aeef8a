/*
 * resample.c - a clip's mono samples resampled to the output rate with
 * soxr, one resampler per decoder, kept from clip to clip while the input
 * rate stays the same.
 */
#include <stddef.h>
#include <stdint.h>

#include <soxr.h>

#include "../common/prog.h"
#include "decode_priv.h"

/* A resampler from rate in to the output rate, reused while the input
 * rate stays the same. */
int get_soxr(struct decoder *d, uint32_t in, struct decoded *out)
{
	soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
	soxr_quality_spec_t q = soxr_quality_spec(SOXR_HQ, 0);
	/* One thread each: wavcat runs a decoder per core already. */
	soxr_runtime_spec_t rt = soxr_runtime_spec(1);
	soxr_error_t err = NULL;

	if (d->soxr && d->soxr_rate == in) {
		err = soxr_clear(d->soxr);
		if (err == NULL)
			return 0;
	}
	if (d->soxr)
		soxr_delete(d->soxr);
	d->soxr = soxr_create(in, d->cfg.rate, 1, &err, &io, &q, &rt);
	d->soxr_rate = in;
	if (d->soxr == NULL || err != NULL) {
		if (d->soxr)
			soxr_delete(d->soxr);
		d->soxr = NULL;
		set_reason(out, "unable to resample from %lu Hz: %s",
			   (unsigned long)in, err ? err : "soxr_create failed");
		out->status = DEC_FATAL;
		return -1;
	}
	return 0;
}

/* Feeds n mono samples (NULL: the end of the clip) through soxr. The
 * time the sink spends handing pieces on is not resampling. */
int resample(struct decoder *d, const double *mono, size_t n,
	     struct sink *s)
{
	double t0 = prog_now(), e0 = s->t_emit;
	const float *x = NULL;
	size_t i, idone, odone;
	soxr_error_t err;

	if (mono != NULL) {
		for (i = 0; i < n; i++)
			d->fbuf[i] = (float)mono[i];
		x = d->fbuf;
	}
	do {
		err = soxr_process(d->soxr, x, n, &idone, d->rbuf, RCHUNK,
				   &odone);
		if (err != NULL) {
			set_reason(s->out, "resampling failed: %s", err);
			return -1;
		}
		sink_float(s, d->rbuf, odone);
		if (s->stop)
			break;
		if (x != NULL) {
			x += idone;
			n -= idone;
			if (idone == 0 && odone == 0 && n > 0) {
				set_reason(s->out, "resampler stalled");
				return -1;
			}
		}
	} while (x != NULL ? n > 0 : odone > 0);
	d->t_resample += prog_now() - t0 - (s->t_emit - e0);
	return 0;
}
