/*
 * image_digest.h - the SHA-256 of a whole image file, as sha256sum would
 * print it, for salvage's report: what a forensic examiner compares with
 * their acquisition hash.
 *
 * Invariants:
 *  - every byte of the file counts, holes included; a hole is hashed as
 *    zeros without being read (SEEK_DATA/SEEK_HOLE where the file system has
 *    them, cli_next_data), so a sparse 32 GiB image holding 8 GiB costs 8 GiB
 *    of reads and 32 GiB of hashing;
 *  - every read of the image made for the digest is over when the function
 *    returns (the helper thread that reads ahead is joined), so a digest taken
 *    before and one after other work bracket every read of that work;
 *  - the file is only read; a file that shrinks while it is hashed ends the
 *    digest early (its value then differs from a later one).
 */
#ifndef RFS_IMAGE_DIGEST_H
#define RFS_IMAGE_DIGEST_H

#include "rfs/status.h"
#include "rfs/sha256.h"

/* Hashes the file at path into hex (lower-case, NUL-terminated).  A read
 * error is RFS_ERR_IO with errno's text in err. */
rfs_status rfs_image_digest(const char *path, char hex[RFS_SHA256_HEX_LEN + 1],
			    struct rfs_error *err);

#endif
