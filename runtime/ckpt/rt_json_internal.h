/* rt_json_internal.h - the one JSON parser of checkpoint and safetensors headers,
 * defined in rt_safetensors.c and shared with the rt_ckpt_* files (rt_ckpt_internal.h
 * includes it). Private to runtime/ckpt. */
#ifndef RT_JSON_INTERNAL_H
#define RT_JSON_INTERNAL_H

#include <stddef.h>

struct json_t;
/* Parses n bytes of JSON (jansson flags) into *out (new ref). 0 ok, -1 invalid JSON
 * (why = "byte N: message"), -2 out of memory. */
int rtp_json_load(const char *s, size_t n, size_t flags, struct json_t **out, char *why,
                  size_t cap);

#endif
