/* rt_results_schema.c - opening the SQLite file safely and keeping its schema.
 *
 * Every connection: WAL journal (readers never block the writer; several kernels
 * append at once), synchronous=NORMAL (a commit survives a process crash; only a
 * power cut may lose the last commits, never corrupt the file), a busy timeout so
 * concurrent writers wait instead of failing, foreign keys on (delete cascades).
 *
 * The file must be empty (a new store) or carry kiln_meta.schema_version; anything
 * else - a file that is not SQLite, an SQLite database of another program, a store
 * from a newer Kiln - is refused with RT_EFORMAT and nothing is written to it.
 */
#include "rt_results_internal.h"
#include "rt_file.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *const schema_sql =
    "CREATE TABLE IF NOT EXISTS kiln_meta(key TEXT PRIMARY KEY, value TEXT);"
    "CREATE TABLE IF NOT EXISTS runs("
    " id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT, notebook TEXT,"
    " status TEXT NOT NULL, start_time REAL, end_time REAL, device TEXT, precision TEXT,"
    " kiln_version TEXT, dataset TEXT, model_spec TEXT, host TEXT, pid INTEGER,"
    " proc_start TEXT);"
    "CREATE TABLE IF NOT EXISTS params("
    " run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    " key TEXT NOT NULL, value TEXT, PRIMARY KEY(run_id, key));"
    "CREATE TABLE IF NOT EXISTS metrics("
    " run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    " key TEXT NOT NULL, kind INTEGER NOT NULL, step INTEGER, epoch INTEGER,"
    " value REAL, time REAL);"
    "CREATE INDEX IF NOT EXISTS metrics_run ON metrics(run_id, key, kind, step);"
    "CREATE TABLE IF NOT EXISTS checkpoints("
    " run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    " path TEXT NOT NULL, step INTEGER, epoch INTEGER, metric TEXT, metric_value REAL,"
    " time REAL);"
    "INSERT OR IGNORE INTO kiln_meta VALUES('schema_version', '1');";

rt_status rtp_exec(sqlite3 *db, const char *sql, rt_error *err)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        RT_ERR(err, RT_EIO, "results store: %s", msg ? msg : sqlite3_errmsg(db));
        sqlite3_free(msg);
        return RT_EIO;
    }
    return RT_OK;
}

rt_status rtp_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st, rt_error *err)
{
    if (sqlite3_prepare_v2(db, sql, -1, st, NULL) != SQLITE_OK)
        return RT_ERR(err, RT_EIO, "results store: %s", sqlite3_errmsg(db));
    return RT_OK;
}

char *rtp_col_dup(sqlite3_stmt *st, int col)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    return t ? strdup((const char *)t) : NULL;
}

double rtp_col_double(sqlite3_stmt *st, int col)
{
    if (sqlite3_column_type(st, col) == SQLITE_NULL) return NAN;
    return sqlite3_column_double(st, col);
}

/* Checks what is in the file: 0 = a Kiln store, 1 = empty (new), or an error. */
static rt_status check_kind(sqlite3 *db, const char *path, int *is_new, rt_error *err)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db,
                                "SELECT count(*), sum(name = 'kiln_meta') FROM "
                                "sqlite_master WHERE type = 'table'",
                                -1, &st, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        int ec = sqlite3_errcode(db);
        char msg[256];
        snprintf(msg, sizeof msg, "%s", sqlite3_errmsg(db));
        sqlite3_finalize(st);
        if (ec == SQLITE_NOTADB || ec == SQLITE_CORRUPT)
            return RT_ERR(err, RT_EFORMAT,
                          "results store %s is not an SQLite database (%s) ---> HINT: "
                          "point --results or KILN_RESULTS at a new file name",
                          path, msg);
        return RT_ERR(err, RT_EIO, "cannot read results store %s: %s", path, msg);
    }
    long ntables = sqlite3_column_int64(st, 0);
    long has_meta = sqlite3_column_int64(st, 1);
    sqlite3_finalize(st);
    *is_new = ntables == 0;
    if (ntables > 0 && !has_meta)
        return RT_ERR(err, RT_EFORMAT,
                      "%s is an SQLite database but not a Kiln results store (no kiln_meta "
                      "table); refusing to write into it ---> HINT: choose another "
                      "--results path",
                      path);
    if (*is_new) return RT_OK;
    if (rtp_prepare(db, "SELECT value FROM kiln_meta WHERE key = 'schema_version'", &st, err))
        return RT_EFORMAT;
    int version = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
    sqlite3_finalize(st);
    if (version < 1 || version > RTP_RESULTS_SCHEMA_VERSION)
        return RT_ERR(err, RT_EFORMAT,
                      "results store %s has schema version %d; this Kiln reads version %d "
                      "---> HINT: use a newer Kiln or another --results path",
                      path, version, RTP_RESULTS_SCHEMA_VERSION);
    return RT_OK;
}

static rt_status open_db(const char *path, int readonly, sqlite3 **db, int *ro_file, rt_error *err)
{
    *ro_file = 0;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX;
    if (!readonly) {
        /* the store holds parameters, URLs and host names: directories made for it
         * are 0700 and a new file 0600 (SQLite gives its -wal/-shm files the same) */
        if (rt_file_make_parent(path, 0700) != 0)
            return RT_ERR(err, RT_EIO,
                          "cannot create the directory of results store %s: "
                          "%s ---> HINT: set --results or KILN_RESULTS to a writable "
                          "place",
                          path, strerror(errno));
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0) close(fd);
        flags |= SQLITE_OPEN_CREATE;
    } else if (access(path, F_OK) != 0) {
        return RT_ERR(err, RT_ENOTFOUND, "no results store at %s (no run recorded yet)", path);
    }
    int rc = sqlite3_open_v2(path, db, flags, NULL);
    if (rc != SQLITE_OK && readonly) {
        sqlite3_close(*db);
        *ro_file = 1;
        rc = sqlite3_open_v2(path, db, SQLITE_OPEN_READONLY, NULL);
    }
    if (rc != SQLITE_OK) {
        rt_status s = RT_ERR(err, RT_EIO,
                             "cannot open results store %s: %s ---> HINT: set "
                             "--results or KILN_RESULTS to a writable place",
                             path, *db ? sqlite3_errmsg(*db) : "out of memory");
        sqlite3_close(*db);
        *db = NULL;
        return s;
    }
    sqlite3_busy_timeout(*db, RTP_RESULTS_BUSY_MS);
    /* a store may come from elsewhere (%results --pull): its schema is not trusted to
     * run functions with side effects, and SQL cannot corrupt the file on purpose */
    sqlite3_db_config(*db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
    sqlite3_db_config(*db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
    sqlite3_db_config(*db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, NULL);
    return RT_OK;
}

/* journal_mode=WAL. Switching needs a moment alone with the file, and SQLite answers
 * SQLITE_BUSY at once (no busy handler) while another connection is opening it, so
 * two kernels creating one store at the same time retry here. WAL also needs write
 * access to the directory (-wal, -shm files). */
static rt_status set_wal(sqlite3 *db, const char *path, int readonly, rt_error *err)
{
    for (int waited_ms = 0;; waited_ms += 10) {
        sqlite3_stmt *st = NULL;
        RT_TRY(rtp_prepare(db, "PRAGMA journal_mode=WAL", &st, err));
        int rc = sqlite3_step(st);
        sqlite3_finalize(st);
        if (rc == SQLITE_ROW || readonly) return RT_OK;
        int ec = sqlite3_errcode(db);
        if ((ec != SQLITE_BUSY && ec != SQLITE_LOCKED) || waited_ms >= RTP_RESULTS_BUSY_MS)
            return RT_ERR(err, RT_EIO,
                          "cannot write results store %s: %s ---> HINT: set "
                          "--results or KILN_RESULTS to a writable place",
                          path, sqlite3_errmsg(db));
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

rt_status rtp_schema_open(const char *path, int readonly, sqlite3 **out, rt_error *err)
{
    sqlite3 *db = NULL;
    int ro_file = 0, is_new = 0;
    *out = NULL;
    RT_TRY(open_db(path, readonly, &db, &ro_file, err));
    rt_status s = check_kind(db, path, &is_new, err);
    if (s == RT_OK && !ro_file) s = set_wal(db, path, readonly, err);
    if (s == RT_OK && !ro_file)
        s = rtp_exec(db, "PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;", err);
    if (s == RT_OK && !readonly && is_new) {
        s = rtp_exec(db, "BEGIN IMMEDIATE", err);
        if (s == RT_OK) s = rtp_exec(db, schema_sql, err);
        if (s == RT_OK) s = rtp_exec(db, "COMMIT", err);
        if (s != RT_OK) {
            sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
            RT_ERR(err, RT_EIO,
                   "cannot write results store %s: %s ---> HINT: set "
                   "--results or KILN_RESULTS to a writable place",
                   path, sqlite3_errmsg(db));
        }
    }
    if (s != RT_OK) {
        sqlite3_close(db);
        return s;
    }
    *out = db;
    return RT_OK;
}

rt_status rtp_schema_repair(sqlite3 *db, rt_error *err)
{
    sqlite3_stmt *st = NULL, *up = NULL;
    RT_TRY(rtp_prepare(db,
                       "SELECT id, host, pid, proc_start FROM runs WHERE status = "
                       "'running'",
                       &st, err));
    rt_status s = rtp_prepare(db,
                              "UPDATE runs SET status = 'interrupted', end_time = "
                              "coalesce((SELECT max(time) FROM metrics WHERE run_id = "
                              "?1), start_time) WHERE id = ?1 AND status = 'running'",
                              &up, err);
    int64_t dead[256];
    size_t ndead = 0;
    while (s == RT_OK && ndead < 256 && sqlite3_step(st) == SQLITE_ROW) {
        const char *host = (const char *)sqlite3_column_text(st, 1);
        const char *start = (const char *)sqlite3_column_text(st, 3);
        if (rtp_proc_alive(host, (long)sqlite3_column_int64(st, 2), start) == 0)
            dead[ndead++] = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    for (size_t i = 0; s == RT_OK && i < ndead; i++) {
        sqlite3_bind_int64(up, 1, dead[i]);
        if (sqlite3_step(up) != SQLITE_DONE)
            s = RT_ERR(err, RT_EIO, "results store: %s", sqlite3_errmsg(db));
        sqlite3_reset(up);
    }
    sqlite3_finalize(up);
    return s;
}
