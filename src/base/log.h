/* base/log.h — diagnostics, one line per message, filtered by TSR_LOG (error|warn|info|debug;
 * default warn): on stderr, or to the callback an embedding program set (tsr_log_set_callback).
 * A process that is one rank of a distributed job tags every line with "[rank r/n]". */
#ifndef TSR_BASE_LOG_H
#define TSR_BASE_LOG_H

typedef enum {
  TSRI_LOG_ERROR = 0,
  TSRI_LOG_WARN = 1,
  TSRI_LOG_INFO = 2,
  TSRI_LOG_DEBUG = 3
} tsri_log_level;

void tsri_log(tsri_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* This process is rank `rank` of `size` (dist/ sets it when it joins an MPI job): later lines
 * start with "[rank r/n] ". A size of 0 removes the tag. Process-wide, like the rank itself. */
void tsri_log_set_rank(int rank, int size);

#endif
