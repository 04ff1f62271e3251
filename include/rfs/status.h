/*
 * status.h - rfsck's error values.
 *
 * Every function that can fail returns an rfs_status.  RFS_OK is 0 and every
 * failure is a positive value in a range of its own (1000..), so a status can
 * never be confused with an errno, a byte count or an exit code.  Details that a
 * caller may want to show (which block, which byte, the errno of a failed system
 * call, a short reason) travel in a struct rfs_error filled by the callee.
 *
 * Invariants:
 *  (1) A function that returns RFS_OK leaves *err untouched.
 *  (2) A function that returns a failure fills *err (when err is not NULL) with
 *      the same status; the first failure wins when an error is already set
 *      (rfs_error_set keeps the original cause and ignores later ones).
 *  (3) No function below main() exits, aborts or longjmps on bad disk data.
 */
#ifndef RFS_STATUS_H
#define RFS_STATUS_H

#include <stdint.h>

typedef enum rfs_status {
	RFS_OK = 0,
	RFS_ERR_IO = 1000,      /* a read or write failed; errno in err->sys_errno */
	RFS_ERR_SHORT,          /* the device ends before the block asked for */
	RFS_ERR_NOMEM,          /* an allocation failed */
	RFS_ERR_CORRUPT,        /* on-disk data violates the format */
	RFS_ERR_NOT_REISERFS,   /* no ReiserFS v3 superblock where one must be */
	RFS_ERR_UNSUPPORTED,    /* valid but not handled (e.g. external journal) */
	RFS_ERR_NOT_FOUND,      /* a key, name or path does not exist */
	RFS_ERR_INVALID,        /* a caller passed arguments that make no sense */
	RFS_ERR_READONLY,       /* a write was asked of a read-only device */
	RFS_ERR_BUSY,           /* the device is mounted or locked */
	RFS_ERR_UNDO,           /* an undo file failed verification */
	RFS_ERR_CANCELLED,      /* the user or a signal stopped the run */
	RFS_ERR_LIMIT,          /* a bound (depth, size, count) was exceeded */
	RFS_ERR_SELFTEST,       /* a built-in known-answer test failed */
	RFS_ERR_INJECTED,       /* a test hook made this operation fail */
	RFS_STATUS_END
} rfs_status;

struct rfs_error {
	rfs_status status;
	uint64_t block;         /* block concerned, or RFS_NO_BLOCK */
	uint32_t offset;        /* byte offset inside the block, or 0 */
	int sys_errno;          /* errno for RFS_ERR_IO, else 0 */
	char msg[200];          /* one line, no trailing newline */
};

#define RFS_NO_BLOCK UINT64_MAX

/* Name of a status ("I/O error", ...).  Never NULL. */
const char *rfs_strerror(rfs_status st);

/* Clears *err to RFS_OK. */
void rfs_error_clear(struct rfs_error *err);

/*
 * Records a failure in *err unless one is recorded already, and returns st, so
 * that "return rfs_error_set(err, ...)" reads naturally.  err may be NULL.
 */
rfs_status rfs_error_set(struct rfs_error *err, rfs_status st, uint64_t block,
			 const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Like rfs_error_set for RFS_ERR_IO, also recording errno. */
rfs_status rfs_error_sys(struct rfs_error *err, int sys_errno, uint64_t block,
			 const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Formats *err as one human line ("I/O error at block 17: ...") into buf. */
void rfs_error_format(const struct rfs_error *err, char *buf, unsigned len);

#endif
