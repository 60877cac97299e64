#ifndef COHERENCE_POSTGRESQL_SHIM_H
#define COHERENCE_POSTGRESQL_SHIM_H

// libpq, PostgreSQL's C client library (Debian: libpq-dev, header in /usr/include/postgresql).
#include <libpq-fe.h>

#endif
