/* rt_ckpt_internal.h - private pieces shared by the rt_ckpt_* files (and their tests).
 * Not for magics/: use rt_ckpt.h and rt_ckpt_dir.h. */
#ifndef RT_CKPT_INTERNAL_H
#define RT_CKPT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "rt_ckpt.h"
#include "rt_json_internal.h" /* rtp_json_load */
#include "rt_safetensors.h"

/* ---- atomic file writing (rt_ckpt_io.c) ---- */
typedef struct rtp_ckpt_file {
    int fd;     /* -1 when closed */
    char *path; /* the final name */
    char *tmp;  /* path + ".tmp", in the same directory */
    uint64_t written;
} rtp_ckpt_file;

/* The error for a failed system call with errno e while `doing` something to path:
 * ENOSPC/EDQUOT/EFBIG -> "disk full", ENOENT -> RT_ENOTFOUND, with hints. */
RT_MUST_USE rt_status rtp_ckpt_errno_error(rt_error *err, int e, const char *doing,
                                           const char *path);
/* Creates (truncates) path.tmp for writing. On failure nothing is left behind. */
RT_MUST_USE rt_status rtp_ckpt_file_begin(rtp_ckpt_file *f, const char *path, rt_error *err);
/* An rt_st_sink_fn writing to f (user = rtp_ckpt_file *); checks every write. */
RT_MUST_USE rt_status rtp_ckpt_file_write(void *f, const void *buf, size_t len, rt_error *err);
/* fsync, close, rename over path, fsync the directory. On failure before the rename,
 * removes the tmp file and leaves path untouched. Frees f's strings either way. */
RT_MUST_USE rt_status rtp_ckpt_file_commit(rtp_ckpt_file *f, rt_error *err);
/* Starts writing [off, off + len) of f's tmp file to disk without waiting for it
 * (Linux sync_file_range; nothing elsewhere). Advisory: a failure shows at the fsync
 * of rtp_ckpt_file_commit. */
void rtp_ckpt_file_start_writeback(rtp_ckpt_file *f, uint64_t off, uint64_t len);

/* Closes and removes the tmp file, frees f's strings; safe after a failed begin. */
void rtp_ckpt_file_abort(rtp_ckpt_file *f);

/* Writes len bytes at offset off of f's tmp file (pwrite), checking every call. */
RT_MUST_USE rt_status rtp_ckpt_file_pwrite(rtp_ckpt_file *f, const void *buf, size_t len,
                                           uint64_t off, rt_error *err);

/* ---- the v2 data checksum, XXH3-64 (rt_ckpt_hash.c) ---- */
typedef struct rtp_ckpt_hash rtp_ckpt_hash;
rtp_ckpt_hash *rtp_ckpt_hash_create(void); /* NULL when out of memory */
void rtp_ckpt_hash_update(rtp_ckpt_hash *h, const void *buf, size_t len);
uint64_t rtp_ckpt_hash_digest(const rtp_ckpt_hash *h);
void rtp_ckpt_hash_destroy(rtp_ckpt_hash *h); /* NULL ok */
uint64_t rtp_ckpt_xxh3(const void *buf, size_t len);
#ifdef __x86_64__
/* The bulk work built for AVX2 / AVX-512 (rt_ckpt_hash_isa.c): call one only where
 * __builtin_cpu_supports says the CPU has it. state is an rtp_ckpt_hash. */
uint64_t rtp_ckpt_xxh3_avx2(const void *buf, size_t len);
uint64_t rtp_ckpt_xxh3_avx512(const void *buf, size_t len);
void rtp_ckpt_hash_update_avx2(void *state, const void *buf, size_t len);
void rtp_ckpt_hash_update_avx512(void *state, const void *buf, size_t len);
#endif
/* "%016llx" of a hash into out[17]. */
void rtp_ckpt_xxh3_hex(uint64_t h, char out[17]);

/* Reads bytes [off, off+len) of an open file; RT_EFORMAT if it ends first. */
RT_MUST_USE rt_status rtp_ckpt_pread(int fd, void *buf, size_t len, uint64_t off, const char *what,
                                     rt_error *err);

/* ---- metadata contract (rt_ckpt_meta.c) ---- */
/* Keys the writer fills itself; callers may not set them. */
int rtp_ckpt_meta_reserved(const char *key);
/* CRC-32 over the canonical form of the header (docs/checkpoint-format.md): every
 * tensor in data order (name, dtype, shape, offsets), then every metadata entry in key
 * order except "header_crc32", NUL-separated. `info(i)` / `meta(i)` enumerate them. */
typedef const rt_st_tensor_info *(*rtp_tensor_at_fn)(void *src, size_t i);
typedef void (*rtp_meta_at_fn)(void *src, size_t i, const char **k, const char **v);
uint32_t rtp_ckpt_header_crc32(void *src, size_t ntensors, rtp_tensor_at_fn info, size_t nmeta,
                               rtp_meta_at_fn meta);
/* "%08x" of a CRC into out[9]. */
void rtp_ckpt_crc_hex(uint32_t crc, char out[9]);
/* Checks format / format_version / the typed keys of a parsed header. */
RT_MUST_USE rt_status rtp_ckpt_meta_check(const rt_st_index *ix, const char *what, rt_error *err);
/* Parses a decimal int64 (the whole string); 0 on success. */
int rtp_parse_i64(const char *s, int64_t *out);
/* 1 when s is a JSON text (any type), 0 when not, -1 when out of memory. */
int rtp_ckpt_json_valid(const char *s);
/* m as compact JSON; caller frees; NULL when out of memory or name is not UTF-8. */
char *rtp_ckpt_metric_json(const rt_ckpt_metric *m);
/* Decodes a metric JSON text; 0 on success, -1 when malformed, -2 out of memory. */
int rtp_ckpt_metric_parse(const char *s, rt_ckpt_metric *m);

#endif
