/*
 * childlog.h: what the device process's libraries write to stdout and
 * stderr (the compiler's "1 error generated.", a kernel's printf), made
 * into lines the journal can file.
 *
 * Under the journal (log_under_journal) every line of coopd's stderr needs
 * its own "<N>" priority prefix (log.h); the libraries of the device
 * process (PoCL, LLVM, the CUDA driver) write their own lines without one,
 * which journald logs at info and, with a partial line, glued to the next
 * of coopd's. childlog_start puts a pipe under descriptors 1 and 2 and a
 * thread that writes each whole line on with a prefix: stderr's as
 * warnings (<4>), stdout's as information (<6>). Elsewhere it does nothing.
 */
#ifndef COOPD_CHILDLOG_H
#define COOPD_CHILDLOG_H

/* 0, or a negative errno (the streams are then left as they were). Once a
 * process; an atexit handler flushes stdio and waits for the relay to pass
 * on what was written before exit. */
int childlog_start(void);

#endif /* COOPD_CHILDLOG_H */
