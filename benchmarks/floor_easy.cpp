// The C++ floor of benchmarks/drivers.py: a minimal EASY-FCFS (or plain FCFS) simulation loop.
//
//     c++ -O2 -std=c++17 -o floor_easy benchmarks/floor_easy.cpp
//     ./floor_easy easy JOBS.txt 3        # MODE (easy | fcfs), jobs file, repetitions (min is printed)
//
// JOBS.txt (written by benchmarks/cpp_floor.py from the Batsim workload the benchmark simulates):
// a first line "nb_machines nb_jobs", then one line "subtime res walltime runtime" per job, in
// Batsim's submission order (subtime, then job id string); walltime -1 = none; runtime is the
// delay profile's duration.
//
// Model (the same work batfeed's schedulers/easy.py does with its defaults, reservation "count"):
// a homogeneous machine count, no machine ids; a job runs min(runtime, walltime) (Batsim kills it
// at its walltime); its expected end for reservations is start + walltime (infinite without one).
// After all the events of an instant (completions, submissions), one decision:
//   1. start jobs from the head of the queue (submission order) while they fit;
//   2. EASY only: the head reserves: running jobs sorted by (expected end, start order) give back
//      their machines until the head's q are free; that end is the shadow time, and the surplus
//      then, extra, is counted at the job that crosses q (models.md §A); one pass over the other
//      waiting jobs starts every job with q <= free and (now + walltime <= shadow or q <= extra),
//      extra -= q for the latter.  No machine free: no decision (nothing could start).
// Jobs asking for more machines than the platform has, or none, are rejected at submission.
//
// On KTH-SP2 and CEA-Curie every start time is batfeed's (benchmarks/cpp_floor.py --check: same sum
// of start times, same mean wait, for EASY and FCFS).  The one possible difference is the message
// boundaries: Batsim (and batfeed's engine) may deliver the events of one instant in several
// messages, the scheduler deciding after each, whereas this loop decides once per instant.
// No outputs, no checks: it prints the run's jobs, a checksum (sum of start times, mean wait,
// makespan) and the best time of the repetitions, measured around the simulation only (not the
// reading of the input).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <queue>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

namespace {

const double INF = std::numeric_limits<double>::infinity();

struct Job {
    double submit, wall, run;   // wall: requested time (INF without walltime)
    int res;
};

struct Running {                // a running job in the reservation profile
    double end;                 // expected end: start + walltime
    long seq;                   // start order (ties)
    int res;
    bool operator<(const Running& o) const { return end < o.end || (end == o.end && seq < o.seq); }
};

struct Result {
    long started = 0, rejected = 0, decisions = 0;
    double sum_start = 0, sum_wait = 0, makespan = 0;
};

Result simulate(const std::vector<Job>& jobs, int machines, bool easy) {
    Result r;
    std::vector<double> start(jobs.size(), -1);
    std::vector<Running> key(jobs.size());
    using Ev = std::pair<double, int>;                               // (finish, job)
    std::priority_queue<Ev, std::vector<Ev>, std::greater<Ev>> ends;
    std::set<Running> profile;                                       // running jobs by expected end
    std::vector<int> queue;                                          // waiting jobs, submission order
    std::vector<char> gone(jobs.size(), 0);
    int free = machines;
    long seq = 0;
    size_t next = 0;

    auto launch = [&](int j, double now) {
        const Job& jb = jobs[j];
        start[j] = now;
        free -= jb.res;
        double finish = now + std::min(jb.run, jb.wall);
        ends.emplace(finish, j);
        key[j] = Running{now + jb.wall, seq++, jb.res};
        if (easy) profile.insert(key[j]);
        r.started++;
        r.sum_start += now;
        r.sum_wait += now - jb.submit;
        r.makespan = std::max(r.makespan, finish);
    };

    while (next < jobs.size() || !ends.empty()) {
        double now = INF;
        if (next < jobs.size()) now = jobs[next].submit;
        if (!ends.empty()) now = std::min(now, ends.top().first);
        while (!ends.empty() && ends.top().first <= now) {          // completions of this instant
            int j = ends.top().second;
            ends.pop();
            free += jobs[j].res;
            if (easy) profile.erase(key[j]);
        }
        for (; next < jobs.size() && jobs[next].submit <= now; ++next) {   // submissions
            if (jobs[next].res > machines || jobs[next].res <= 0) r.rejected++;
            else queue.push_back(static_cast<int>(next));
        }
        if (free == 0 || queue.empty()) continue;
        r.decisions++;
        size_t h = 0;                                                // 1) the head while it fits
        while (h < queue.size() && jobs[queue[h]].res <= free) launch(queue[h++], now);
        queue.erase(queue.begin(), queue.begin() + static_cast<long>(h));
        if (!easy || queue.empty() || free == 0) continue;
        const Job& head = jobs[queue[0]];                            // 2) the head's reservation
        int need = head.res - free, acc = 0;
        double shadow = INF;
        for (const Running& rj : profile) {
            acc += rj.res;
            if (acc >= need) { shadow = rj.end; break; }
        }
        int extra = std::max(free + acc - head.res, 0);
        bool any = false;                                            // 3) backfill, one pass
        for (size_t i = 1; i < queue.size() && free > 0; ++i) {
            int j = queue[i];
            const Job& jb = jobs[j];
            if (jb.res > free) continue;
            bool after = now + jb.wall > shadow;
            if (after && jb.res > extra) continue;
            launch(j, now);
            if (after) extra -= jb.res;
            gone[j] = any = true;
        }
        if (any) queue.erase(std::remove_if(queue.begin() + 1, queue.end(), [&](int j) { return gone[j]; }),
                             queue.end());
    }
    return r;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3 || (std::strcmp(argv[1], "easy") != 0 && std::strcmp(argv[1], "fcfs") != 0)) {
        std::fprintf(stderr, "usage: %s easy|fcfs JOBS.txt [REPEAT]\n", argv[0]);
        return 2;
    }
    bool easy = std::strcmp(argv[1], "easy") == 0;
    int repeat = argc > 3 ? std::max(1, std::atoi(argv[3])) : 1;
    FILE* f = std::fopen(argv[2], "r");
    int machines = 0;
    long n = 0;
    if (!f || std::fscanf(f, "%d %ld", &machines, &n) != 2 || machines <= 0 || n < 0) {
        std::fprintf(stderr, "%s: cannot read the header 'nb_machines nb_jobs'\n", argv[2]);
        return 1;
    }
    std::vector<Job> jobs(static_cast<size_t>(n));
    for (long i = 0; i < n; ++i) {
        Job& j = jobs[static_cast<size_t>(i)];
        if (std::fscanf(f, "%lf %d %lf %lf", &j.submit, &j.res, &j.wall, &j.run) != 4) {
            std::fprintf(stderr, "%s: bad job line %ld\n", argv[2], i + 2);
            return 1;
        }
        if (j.wall <= 0) j.wall = INF;
    }
    std::fclose(f);

    Result best;
    double seconds = INF;
    for (int k = 0; k < repeat; ++k) {
        auto t0 = std::chrono::steady_clock::now();
        Result r = simulate(jobs, machines, easy);
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (k > 0 && r.sum_start != best.sum_start) {
            std::fprintf(stderr, "repetitions disagree\n");
            return 1;
        }
        best = r;
        seconds = std::min(seconds, s);
    }
    std::printf("mode=%s jobs=%ld started=%ld rejected=%ld decisions=%ld sum_start=%.17g mean_wait=%.17g "
                "makespan=%.17g seconds=%.9f\n", argv[1], n, best.started, best.rejected, best.decisions,
                best.sum_start, best.started ? best.sum_wait / static_cast<double>(best.started) : 0.0,
                best.makespan, seconds);
    return 0;
}
