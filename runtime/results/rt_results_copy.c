/* rt_results_copy.c - the results store as one self-contained file and back
 * (rt_results.h): VACUUM INTO for a snapshot that includes what is still in the WAL,
 * SQLite's online backup to replace a store's contents in place (so its -wal/-shm and
 * any open readers stay consistent). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "rt_results_internal.h"

rt_status rt_results_snapshot(const char *path, const char *dest, rt_error *err)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    RT_TRY(rtp_schema_open(path, 1, &db, err));
    unlink(dest); /* VACUUM INTO refuses an existing file */
    rt_status s = rtp_prepare(db, "VACUUM INTO ?1", &st, err);
    if (s == RT_OK) {
        sqlite3_bind_text(st, 1, dest, -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE)
            s = RT_ERR(err, RT_EIO, "copying results store %s to %s: %s", path, dest,
                       sqlite3_errmsg(db));
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    if (s != RT_OK) unlink(dest);
    return s;
}

/* src, a store that came from elsewhere, holds only what Kiln's schema makes: tables
 * and indexes, no trigger or view (which would run or answer in place of Kiln's own
 * SQL once it is the local store), and passes SQLite's quick check. */
static rt_status foreign_ok(sqlite3 *db, const char *src, rt_error *err)
{
    sqlite3_stmt *st = NULL;
    RT_TRY(rtp_prepare(db,
                       "SELECT type, name FROM sqlite_schema WHERE type NOT IN ('table', "
                       "'index') LIMIT 1",
                       &st, err));
    rt_status s = RT_OK;
    if (sqlite3_step(st) == SQLITE_ROW)
        s = RT_ERR(err, RT_EFORMAT,
                   "%s holds a %s ('%.60s'), which no Kiln results store has: refused, the "
                   "local store is unchanged",
                   src, (const char *)sqlite3_column_text(st, 0),
                   (const char *)sqlite3_column_text(st, 1));
    sqlite3_finalize(st);
    if (s == RT_OK) s = rtp_prepare(db, "PRAGMA quick_check", &st, err);
    if (s == RT_OK) {
        const char *r =
            sqlite3_step(st) == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
        if (!r || strcmp(r, "ok") != 0)
            s = RT_ERR(err, RT_EFORMAT,
                       "%s is damaged (SQLite's quick check: %.200s): refused, the local store "
                       "is unchanged",
                       src, r ? r : sqlite3_errmsg(db));
        sqlite3_finalize(st);
    }
    return s;
}

rt_status rt_results_replace(const char *path, const char *src, rt_error *err)
{
    sqlite3 *from = NULL, *to = NULL;
    RT_TRY(rtp_schema_open(src, 1, &from, err)); /* a Kiln store this Kiln reads */
    rt_status s = foreign_ok(from, src, err);
    if (s == RT_OK) s = rtp_schema_open(path, 0, &to, err);
    if (s == RT_OK) {
        sqlite3_backup *b = sqlite3_backup_init(to, "main", from, "main");
        int rc = b ? sqlite3_backup_step(b, -1) : sqlite3_errcode(to);
        int fin = b ? sqlite3_backup_finish(b) : rc;
        if (rc != SQLITE_DONE || fin != SQLITE_OK)
            s = RT_ERR(err, RT_EIO, "replacing results store %s with %s: %s", path, src,
                       sqlite3_errmsg(to));
    }
    sqlite3_close(to);
    sqlite3_close(from);
    return s;
}
