#ifndef COHERENCE_BENCH_LIBPQ_SHIM_H
#define COHERENCE_BENCH_LIBPQ_SHIM_H

// libpq, PostgreSQL's C client library (Debian: libpq-dev, header in /usr/include/postgresql).
#include <libpq-fe.h>

#endif
