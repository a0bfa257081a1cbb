/* nccl_dl.c - NCCL loaded when the first device group forms (%train --device
 * cuda:0,1), never at start: only multi-GPU training uses it, and libnccl.so.2 is
 * ~200 MB of device code a process maps.
 *
 * Where from, in order: KILN_LIBNCCL when set (that file only; a test hook), the
 * nvidia-nccl-cuN wheel beside a pip-installed Kiln (the [cuda] extra brings it)
 * (<site-packages>/nvidia/nccl/lib/libnccl.so.2 for every CUDA major, rtp_cuda_lib_names,
 * as cuBLAS), then
 * the system's libnccl.so.2 (apt install libnccl2, or LD_LIBRARY_PATH). The library
 * must be NCCL 2.11 or newer (RTP_NCCL_MIN_VERSION: the weighted sum) and is
 * never dlclose'd. ncclCommInitRankConfig (NCCL 2.14) is looked up on its own: an older
 * NCCL lacks it and still loads (cuda_nccl.c then joins with the blocking init). The mock build fills the table from tests/gpu/mock/mock_nccl.c
 * instead of this file.
 */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "../rt_dl.h"
#include "cuda_internal.h"
#include "nccl_dl.h"

static rtp_nccl_fns fns;
static int loaded;
static char why[400];
static char name[256];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load_once(void)
{
    char wheel[PATH_MAX];
    const char *names[3];
    int n = rtp_cuda_lib_names("nccl", "libnccl.so.2", "libnccl.so", wheel, names);
#define SYM(f)                     \
    {                              \
        "nccl" #f, (void **)&fns.f \
    }
    const rt_dl_sym syms[] = {
        SYM(GetVersion),           SYM(GetErrorString), SYM(GetUniqueId),
        SYM(CommInitAll),          SYM(CommInitRank),   SYM(CommDestroy),
        SYM(GroupStart),           SYM(GroupEnd),       SYM(AllReduce),
        SYM(RedOpCreatePreMulSum), SYM(RedOpDestroy),   SYM(Broadcast),
        SYM(CommGetAsyncError),    SYM(CommAbort),
    };
#undef SYM
    rt_dl_result r;
    int ok = rt_dl_load("KILN_LIBNCCL", names, n, syms, sizeof syms / sizeof syms[0], &r);
    snprintf(name, sizeof name, "%s", r.file);
    if (!ok) {
        snprintf(why, sizeof why, "%s", r.why);
        return;
    }
    int v = 0;
    if (fns.GetVersion(&v) != RTP_NCCL_SUCCESS || v < RTP_NCCL_MIN_VERSION) {
        snprintf(why, sizeof why, "it is NCCL %d.%d.%d; Kiln needs 2.11 or newer", v / 10000,
                 v / 100 % 100, v % 100);
        return;
    }
    *(void **)&fns.CommInitRankConfig = dlsym(r.handle, "ncclCommInitRankConfig"); /* 2.14 */
    loaded = 1;
}

rt_status rtp_nccl_load(const rtp_nccl_fns **out, rt_error *err)
{
    pthread_once(&once, load_once);
    *out = loaded ? &fns : NULL;
    if (loaded) return RT_OK;
    return RT_ERR(err, RT_ENODEV,
                  "cannot load NCCL (%s): %s ---> HINT: for the kiln-kernel wheel pip "
                  "install 'kiln-kernel[cuda]' (nvidia-nccl-cu%d), else apt install libnccl2",
                  name, why, CUDART_VERSION / 1000);
}
