// SPDX-License-Identifier: Apache-2.0
#include "bootstrap/pmix_exchange.h"

#include <dlfcn.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>

#include "common/error.h"
#include "common/log.h"
#include "config/read.h"

#ifdef HVD_HAVE_PMIX
#include <pmix.h>
#endif

namespace hvd::bootstrap {

#ifdef HVD_HAVE_PMIX

namespace {

// The PMIx functions libhvd calls, from the library loaded at run time.
struct PmixTable {
    decltype(&PMIx_Init) init = nullptr;
    decltype(&PMIx_Finalize) finalize = nullptr;
    decltype(&PMIx_Put) put = nullptr;
    decltype(&PMIx_Commit) commit = nullptr;
    decltype(&PMIx_Fence_nb) fence_nb = nullptr;
    decltype(&PMIx_Get) get = nullptr;
    decltype(&PMIx_Error_string) error_string = nullptr;
    decltype(&PMIx_Value_destruct) value_destruct = nullptr;  // optional (PMIx >= 4)
    std::string problem;                                      // why it is unusable, if it is
};

template <typename F>
bool find(void *lib, const char *name, F *out, std::string *missing) {
    *out = reinterpret_cast<F>(dlsym(lib, name));
    if (*out == nullptr) *missing += std::string(missing->empty() ? "" : ", ") + name;
    return *out != nullptr;
}

const PmixTable &pmix() {
    static PmixTable table;
    static std::once_flag once;
    std::call_once(once, [] {
        const char *named = config::get_string(config::Setting::kPmixLibrary);
        const std::string path = named != nullptr ? named : "libpmix.so.2";
        // A PMIx already in the process (an MPI library's) is the one to share: a second copy
        // would connect to the server again as the same process.
        void *lib = named == nullptr && dlsym(RTLD_DEFAULT, "PMIx_Init") != nullptr
                        ? RTLD_DEFAULT
                        : dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
        if (lib == nullptr) {
            const char *why = dlerror();
            table.problem = "cannot load " + path + " (" + (why ? why : "unknown error") +
                            (named != nullptr ? "; named by HVD_PMIX_LIBRARY)"
                                              : "; Debian: libpmix2, or set HVD_PMIX_LIBRARY)");
            return;
        }
        std::string missing;
        find(lib, "PMIx_Init", &table.init, &missing);
        find(lib, "PMIx_Finalize", &table.finalize, &missing);
        find(lib, "PMIx_Put", &table.put, &missing);
        find(lib, "PMIx_Commit", &table.commit, &missing);
        find(lib, "PMIx_Fence_nb", &table.fence_nb, &missing);
        find(lib, "PMIx_Get", &table.get, &missing);
        find(lib, "PMIx_Error_string", &table.error_string, &missing);
        table.value_destruct =
            reinterpret_cast<decltype(table.value_destruct)>(dlsym(lib, "PMIx_Value_destruct"));
        if (!missing.empty()) table.problem = path + " lacks " + missing;
    });
    return table;
}

std::string pmix_error(const PmixTable &t, const char *call, pmix_status_t st) {
    const char *text = t.error_string != nullptr ? t.error_string(st) : nullptr;
    return strprintf("%s failed: %s (PMIx status %d)", call, text != nullptr ? text : "unknown",
                     static_cast<int>(st));
}

void fill_info(pmix_info_t *info, const char *key) {
    std::memset(info, 0, sizeof *info);
    std::strncpy(info->key, key, PMIX_MAX_KEYLEN);
}

// What the fence's callback reports; shared with it, so a callback after a timed-out wait
// still has it to write to.
struct FenceWait {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    pmix_status_t status = PMIX_SUCCESS;
};

void fence_done(pmix_status_t status, void *cbdata) {
    auto *keep = static_cast<std::shared_ptr<FenceWait> *>(cbdata);
    {
        std::lock_guard<std::mutex> lock((*keep)->mu);
        (*keep)->done = true;
        (*keep)->status = status;
    }
    (*keep)->cv.notify_all();
    delete keep;
}

// Process `rank` of the namespace of `me` (PMIX_RANK_WILDCARD: all of them).
pmix_proc_t proc_of(const pmix_proc_t &me, pmix_rank_t rank) {
    pmix_proc_t p;
    std::memset(&p, 0, sizeof p);
    std::memcpy(p.nspace, me.nspace, sizeof p.nspace);
    p.rank = rank;
    return p;
}

RendezvousEndpoint parse_endpoint(const std::string &text) {
    RendezvousEndpoint ep;
    if (!parse_endpoint_text(text, &ep))
        throw Error(HVD_ERR_TRANSPORT, "rank 0's entry is malformed");
    return ep;
}

// The process's PMIx client: connected on first use and kept (PMIx does not survive being
// started again after a full finalize, nor an MPI that starts it after libhvd finalised it),
// finalised when the process exits, as a launcher expects of a client. Call with `serial` held.
const pmix_proc_t *client(const PmixTable &t, std::string *problem) {
    static pmix_proc_t me;
    static bool connected = false;
    if (connected) return &me;
    std::memset(&me, 0, sizeof me);
    pmix_status_t st = t.init(&me, nullptr, 0);
    if (st != PMIX_SUCCESS) {
        *problem = pmix_error(t, "PMIx_Init", st);
        return nullptr;
    }
    connected = true;
    std::atexit([] { (void)pmix().finalize(nullptr, 0); });
    return &me;
}

// PMIX_TIMEOUT (whole seconds, rounded up) for what is left of `deadline`; false when it is
// infinite (no attribute: no limit).
bool timeout_info(const Deadline &deadline, pmix_info_t *info) {
    if (deadline.infinite()) return false;
    fill_info(info, PMIX_TIMEOUT);
    info->value.type = PMIX_INT;
    info->value.data.integer = static_cast<int>((deadline.remaining_ms(INT32_MAX) + 999) / 1000);
    if (info->value.data.integer < 1) info->value.data.integer = 1;
    return true;
}

// Waits for the fence; HVD_ERR_TIMED_OUT past the deadline (the callback may still come: it
// owns its share of `wait`).
hvd_status_t await_fence(FenceWait &wait, const Deadline &deadline, pmix_status_t *status) {
    std::unique_lock<std::mutex> l(wait.mu);
    while (!wait.done && !deadline.expired())
        wait.cv.wait_for(l, std::chrono::milliseconds(deadline.remaining_ms(100)));
    if (!wait.done) return HVD_ERR_TIMED_OUT;
    *status = wait.status;
    return HVD_OK;
}

// Rank 0's entry under `key`, read after the fence.
RendezvousEndpoint read_entry(const PmixTable &t, const pmix_proc_t &me, const std::string &key,
                              const Deadline &deadline) {
    pmix_proc_t zero = proc_of(me, 0);
    pmix_info_t info[1];
    const size_t n_info = timeout_info(deadline, &info[0]) ? 1 : 0;
    pmix_value_t *value = nullptr;
    pmix_status_t st = t.get(&zero, key.c_str(), n_info > 0 ? info : nullptr, n_info, &value);
    std::string text;
    const bool is_text = st == PMIX_SUCCESS && value != nullptr && value->type == PMIX_STRING &&
                         value->data.string != nullptr;
    if (is_text) text = value->data.string;
    if (value != nullptr) {
        if (t.value_destruct != nullptr)
            t.value_destruct(value);
        else if (value->type == PMIX_STRING)
            std::free(value->data.string);
        std::free(value);
    }
    if (st != PMIX_SUCCESS)
        throw Error(HVD_ERR_TRANSPORT,
                    pmix_error(t, "PMIx_Get of rank 0's entry", st) +
                        " (rank 0 could not publish it, or it is not PMIx rank 0)");
    if (!is_text) throw Error(HVD_ERR_TRANSPORT, "rank 0's entry is not a string");
    return parse_endpoint(text);
}

RendezvousEndpoint exchange(int32_t rank, const RendezvousEndpoint &mine, uint64_t round,
                            const Deadline &deadline) {
    const PmixTable &t = pmix();
    if (!t.problem.empty()) throw Error(HVD_ERR_UNSUPPORTED, t.problem);
    std::string problem;
    const pmix_proc_t *me = client(t, &problem);
    if (me == nullptr) throw Error(HVD_ERR_TRANSPORT, problem);
    const std::string key = "hvd.rendezvous." + std::to_string(round);
    std::string put_failure;
    if (rank == 0) {
        std::string text = endpoint_text(mine);
        pmix_value_t value;
        std::memset(&value, 0, sizeof value);
        value.type = PMIX_STRING;
        value.data.string = text.data();
        pmix_status_t st = t.put(PMIX_GLOBAL, key.c_str(), &value);
        if (st == PMIX_SUCCESS) st = t.commit();
        // Rank 0 joins the fence even so: the others then fail at once, finding no entry,
        // instead of waiting for it until their timeout.
        if (st != PMIX_SUCCESS) put_failure = pmix_error(t, "PMIx_Put/PMIx_Commit", st);
    }
    // The fence: every process of the namespace, the data collected to every one of them.
    pmix_proc_t all = proc_of(*me, PMIX_RANK_WILDCARD);
    pmix_info_t info[2];
    fill_info(&info[0], PMIX_COLLECT_DATA);
    info[0].value.type = PMIX_BOOL;
    info[0].value.data.flag = true;
    const size_t n_info = timeout_info(deadline, &info[1]) ? 2 : 1;
    auto wait = std::make_shared<FenceWait>();
    auto *cb = new std::shared_ptr<FenceWait>(wait);
    pmix_status_t st = t.fence_nb(&all, 1, info, n_info, fence_done, cb);
    if (st != PMIX_SUCCESS) {
        delete cb;
        throw Error(HVD_ERR_TRANSPORT, pmix_error(t, "PMIx_Fence", st));
    }
    if (await_fence(*wait, deadline, &st) != HVD_OK)
        throw Error(HVD_ERR_TIMED_OUT,
                    "not every rank of the job reached hvd_init's fence before the timeout");
    if (st != PMIX_SUCCESS) throw Error(HVD_ERR_TRANSPORT, pmix_error(t, "PMIx_Fence", st));
    if (!put_failure.empty()) throw Error(HVD_ERR_TRANSPORT, put_failure);
    return rank == 0 ? mine : read_entry(t, *me, key, deadline);
}

}  // namespace

RendezvousEndpoint exchange_rendezvous_pmix(int32_t rank, const RendezvousEndpoint &mine,
                                            uint64_t round, const Deadline &deadline) {
    static std::mutex serial;
    std::lock_guard<std::mutex> lock(serial);
    try {
        return exchange(rank, mine, round, deadline);
    } catch (const Error &e) {
        throw Error(e.status(), strprintf("rank %d: rendezvous through the launcher's PMIx "
                                          "server: %s",
                                          rank, e.what()));
    }
}

#else  // !HVD_HAVE_PMIX

RendezvousEndpoint exchange_rendezvous_pmix(int32_t rank, const RendezvousEndpoint &, uint64_t,
                                            const Deadline &) {
    throw Error(HVD_ERR_UNSUPPORTED,
                strprintf("rank %d: rendezvous through the launcher's PMIx server: this libhvd "
                          "was built without PMIx (its header was not found)",
                          rank));
}

#endif  // HVD_HAVE_PMIX

}  // namespace hvd::bootstrap
