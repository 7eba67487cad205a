/*
 * tunables.h: the scheduler's constants, each with its reason in one line.
 */
#ifndef MGPU_TUNABLES_H
#define MGPU_TUNABLES_H

/* ------------------------------------------------------------- tunables */
/* The scheduler's constants, each with its reason in one line; the
 * measurements behind them are in doc/tuning.md ("Internal constants"). */
/* mgpu_init warns where the CPU workers asked for outnumber the usable cores
 * more than this many times. */
#define MGPU_THREADS_PER_CORE_WARN 4
/* Seconds of device work a GPU's chunk is sized to. */
#define MGPU_GPU_TARGET_S 2e-3
/* A thief far slower than its victim plans with a quarter of its speed. */
#define MGPU_SLOW_THIEF_MARGIN 4.0
/* "Far slower": under 1/8 of the fastest worker. */
#define MGPU_SLOW_SPLIT_RATIO 8.0
/* A worker that would finish fewer items than this in the batch's predicted
 * time gets no first share (where the others end no later without it). */
#define MGPU_MIN_SHARE_ITEMS 4.0
/* A CPU chunk runs in pieces, the first 1/MGPU_PIECE_FIRST of it, each next
 * bringing the items done to MGPU_PIECE_GROWTH times; one that has taken
 * over MGPU_HANDBACK_FACTOR times its predicted time plus MGPU_HANDBACK_SLACK_S
 * (s) after a piece hands back what it has not started (cpu_worker.c). */
#define MGPU_PIECE_FIRST 16
#define MGPU_PIECE_GROWTH 4
/* The calls of a CPU chunk that its fit learns from one by one; any past
 * these are learnt as one with the last. */
#define MGPU_PIECE_CALLS 8
/* A CPU worker's line that has seen one size only cannot tell a cost per
 * call from a cost per item: where target_s of work is under
 * MGPU_FIT_GROWTH items, one chunk in MGPU_FIT_CPU_TRY is that many, whose
 * pieces differ in size. */
#define MGPU_FIT_CPU_TRY 8
#define MGPU_HANDBACK_FACTOR 8.0
#define MGPU_HANDBACK_SLACK_S 2e-3
/* An overrun under this many seconds past the slack is confirmed by the
 * next piece, of as many items, before anything is handed back: a thread
 * the OS held up for a time slice (a few ms on a loaded machine) runs its
 * next piece on time, and handing its range to a slower worker would make
 * one stall cost the batch many times over. */
#define MGPU_HANDBACK_SURE_S 20e-3
/* CPU workers that have never run a kernel probe it, one item each, once the
 * GPUs have spent this long on it (s), their share of the batch included. */
#define MGPU_PROBE_MIN_S 10e-3
/* Weight of each new first-chunk start in mgpu__start_cost's decayed mean. */
#define MGPU_TEAM_START_WEIGHT 0.1
/* CPU workers sit out a kernel's batches where the GPUs alone are predicted
 * to end them less than 1% later. */
#define MGPU_CPU_NEGLIGIBLE 0.01
/* Under 20%, MGPU_RESERVE_THREADS=auto also tries them all out. */
#define MGPU_CPU_OUT_TRY 0.2
/* GPUs together under 30% of the machine's speed on a kernel: auto also
 * tries them out (a GPU's pageable copies can cost the CPU workers more host
 * memory bandwidth than its items are worth). Disjoint from the CPU workers'
 * fifth, so that at most four ways are offered at once. */
#define MGPU_GPU_OUT_TRY 0.3
/* GPUs of one kind measured within 20% of their median split as equals. */
#define MGPU_ALIKE_TOL 0.2
/* Across MPI ranks (dist_batch.c): a steal must save the owner at least
 * this many times what moving its bytes costs, predictions being uncertain. */
#define MGPU_RANK_STEAL_GAIN 4.0
/* A rank runs its share in parts of about this many seconds of its work,
 * claimed one at a time, so that what is not yet claimed can be stolen... */
#define MGPU_RANK_PART_S 0.05
/* ... and in at least this many parts, whatever its speed. */
#define MGPU_RANK_PARTS_MIN 8
/* Parts a rank keeps running at once: the next one is under way when the
 * last ends, so its workers do not wait between parts. */
#define MGPU_RANK_FLIGHT 2
/* The rate at which a rank is taken to move a stolen range's bytes before
 * it has moved any (bytes/s). */
#define MGPU_RANK_BW_PRIOR 1e9

/* Device buffers and each array in them are aligned to this many bytes. */
#define MGPU_ALIGN_DEV 256
/* Consecutive failed chunks after which a GPU is retired. */
#define MGPU_FAILURES_TO_RETIRE 3
/* Why a batch fails with MGPU_EDEVICE where no worker is left to it. */
#define MGPU_NO_WORKER_WHY "no worker is left that can run it"
/* A device given up: how long its chunks' ends must stay unchanged, and at
 * most how long they are read, to tell the chunks it ended (gpu_hang.c). */
#define MGPU_GIVEUP_SETTLE_S 0.01
#define MGPU_GIVEUP_WAIT_S 0.2
/* Task parts enqueued on a GPU's task stream at once. */
#define MGPU_TASKS_IN_FLIGHT 64
/* A slot's pinned staging, allocated once at this size, and the most
 * pageable bytes a chunk may stage: about a chunk's target time of copying,
 * so that buffers never grow (and pin again) as chunks grow. */
#define MGPU_STAGE_SLOT_BYTES ((size_t)32 << 20)
/* Share of a device's free memory (at open) that its slots divide; the rest
 * is for constants, the kernels' own needs and other users of the device. */
#define MGPU_SLOT_MEM_SHARE 0.85
/* Staging copies: smaller ones are made by the GPU thread alone; larger ones
 * are cut into at most MGPU_COPY_PIECES_MAX pieces of at least
 * MGPU_COPY_PIECE_MIN bytes that CPU workers help copy. */
#define MGPU_COPY_SPLIT_MIN ((size_t)2 << 20)
#define MGPU_COPY_PIECE_MIN ((size_t)1 << 20)
#define MGPU_COPY_PIECES_MAX 16
/* Sleeping CPU workers woken per copy job: beyond four copying threads more
 * add little, and each wake is a system call on the GPU thread's path. */
#define MGPU_COPY_WAKE_MAX 3
/* Threads copying pieces at once, GPU threads included: two per GPU, at
 * least four; more take memory bandwidth from the devices' own transfers. */
#define MGPU_COPY_THREADS_PER_GPU 2
#define MGPU_COPY_THREADS_MIN 4
/* Chunks whose copies are shared from their start once a device ran dry
 * waiting for its host thread; after them, copies start alone again to find
 * out whether the need still exists. */
#define MGPU_SHARE_AHEAD 8
/* Copies out of staging at least this long bypass the caches. */
#define MGPU_STREAM_MIN ((size_t)256 << 10)
/* An idle worker spins this long before it sleeps, so that a batch that
 * follows closely finds its workers awake. */
#define MGPU_IDLE_SPIN_S 50e-6
/* A thread waiting for an event spins this long before it sleeps, so that a
 * short batch's end is seen without a sleep and a wake-up. */
#define MGPU_WAIT_SPIN_S 50e-6
/* The watchdog checks the deadlines ten times per shortest deadline (a fixed
 * MGPU_TIMEOUT, or MGPU_TIMEOUT_FLOOR_S under auto), between these bounds:
 * once a second under auto, so that it costs nothing, and a hung device is
 * still noticed within a few percent of its deadline. (The deadlines are
 * public: mgpurt.h.) */
#define MGPU_WATCH_PERIOD_MIN_S 0.01
#define MGPU_WATCH_PERIOD_MAX_S 1.0
/* The chunk-time model (fit.c): each chunk's weight in the fit falls by this
 * factor per later chunk of the same worker. */
#define MGPU_MODEL_DECAY 0.8
/* A chunk's latency is at most this share of its time once it reaches the
 * saturating size (a tenth). */
#define MGPU_SAT_SHARE 0.9
/* Chunks grow fourfold per claim while the rate still rises with the size,
 * by more than 10% from one size class (sizes within 1.5x) to the next. */
#define MGPU_FIT_GROWTH 4.0
#define MGPU_FIT_RISE 1.1
#define MGPU_FIT_SIZE_CLASS 1.5
/* A size class's rates move this share of the way to each sample's: a few settle them. */
#define MGPU_FIT_CLASS_BLEND 0.5
/* The step-below trial (fit.c, step_below) judges a smaller size by its
 * throughput overlapped: it skips the chunks claimed while a larger one
 * ran (with the default three streams, two), then sums the device time of
 * this many, and keeps the size where that rate is at least this share of
 * the knee's. */
#define MGPU_FIT_TRIAL_SKIP 2
#define MGPU_FIT_TRIAL_CHUNKS 3
#define MGPU_FIT_TRIAL_KEEP 0.97
/* A chunk claimed while the chunks grew, ending after they stopped, opens
 * the growth again only at this many times the rate of the size class below
 * it (fit.c, larger_class: above the 4/3 that overlap can fake). */
#define MGPU_FIT_REOPEN 1.5
/* Chunks of sizes this spread (the weighted variance of the sizes over
 * their mean square) tell latency from rate; closer ones keep one of them. */
#define MGPU_FIT_SPREAD 0.02
/* Time flat in the size over the sizes seen: the rate is taken to rise at
 * least this much past the largest. */
#define MGPU_FIT_FLAT 100.0
/* Chunks whose times scatter about the line by more than this share (items
 * that differ in cost, streams whose chunks overlap) show no latency: the
 * fit is then the mean rate alone. */
#define MGPU_FIT_SCATTER 0.3
/* Where the sizes cannot tell them apart, latency keeps at most this share
 * of the time. */
#define MGPU_FIT_LATENCY_MAX_SHARE 0.9
/* After this many chunks, a timing counts at most MGPU_FIT_CLIP times faster
 * than the fit. */
#define MGPU_FIT_CLIP_AFTER 4
#define MGPU_FIT_CLIP 4.0
/* MGPU_FIT_SHIFT_RUN batches in a row whose chunks of a GPU each took over
 * MGPU_FIT_SHIFT times the fit's predicted time (or under it by that
 * factor): the kernel's cost has changed for good, and the line starts over. */
#define MGPU_FIT_SHIFT 4.0
#define MGPU_FIT_SHIFT_RUN 2
/* A batch counts in that run once this share of its items ran in judged chunks: its first may be cheap. */
#define MGPU_FIT_SHIFT_JUDGED 0.5
/* A chunk that started before the held one ended and is credited with
 * over this many times its rate ran beside it (mgpu__fit_beside): it
 * joins it. Chunks queued one after another run at about one rate. */
#define MGPU_FIT_BESIDE 10.0
/* Or credited with over this many times its rate, where it spent over
 * MGPU_FIT_BESIDE_SHARE of its own span before the held one's end and was
 * credited under the rest of the held one's time: how far apart launches
 * side by side end depends on when the host issued them, not on the
 * kernel, so their credited rates alone do not tell them. A chunk in a
 * pipeline (copy in, kernel, copy out) has at most two of its three stages
 * hidden by the others, so it is credited at most three times the rate of
 * a solo one: past that, with a margin, is no pipelining. */
#define MGPU_FIT_BESIDE_SPAN 4.0
#define MGPU_FIT_BESIDE_SHARE 0.5
/* A solo chunk is learnt while fewer than this many (decayed) of the
 * worker's recent chunks ran overlapped. */
#define MGPU_FIT_OVERLAPPED_MIN 0.5
/* A GPU whose chunks grew into their cap with the rate still rising takes
 * chunks smaller than the cap only where the fit predicts at least this
 * share of the cap's rate. */
#define MGPU_FIT_CAP_LOSS 0.99
/* A GPU's fit is trusted over the prior once its chunks stop growing, or
 * after this many chunks of sizes that never grew (cut by its range or its
 * memory). */
#define MGPU_FIT_TRUST_AFTER 8
/* The floor trials of a GPU's chunks by whole batches (fit.c,
 * mgpu__fit_batch): after this many plain batches of the saturated fit, a
 * batch runs chunks MGPU_FIT_GROWTH times larger (where the last plain
 * batch ran at least MGPU_FIT_BATCH_CHUNKS of them, whose rates spread by
 * MGPU_FIT_BATCH_SPREAD or which the line predicts faster by MGPU_FIT_RISE
 * at the larger size) and is kept at
 * MGPU_FIT_RISE times the best of the last MGPU_FIT_BATCH_BASE plain batches; a batch of a
 * kept floor runs it MGPU_FIT_GROWTH times lower and keeps that at
 * MGPU_FIT_TRIAL_KEEP. A trial not kept waits MGPU_FIT_BATCH_GAP batches
 * for the next, doubling up to MGPU_FIT_BATCH_GAP_MAX. */
#define MGPU_FIT_BATCH_PLAIN 2
#define MGPU_FIT_BATCH_CHUNKS 4
/* Trials up are for kernels whose chunks' rates within one plain batch span
 * this factor or more (items that differ in cost by position), or whose
 * latency the line shows is still over 12% of a chunk's time: elsewhere
 * single chunks judge the size (size_class), and a trial would only cost a
 * batch of chunks too large to overlap their copies. */
#define MGPU_FIT_BATCH_SPREAD 10.0
#define MGPU_FIT_BATCH_GAP 16
#define MGPU_FIT_BATCH_GAP_MAX 256
/* The gap after each trial not kept is this many times the last: trials that fail cost less and less. */
#define MGPU_FIT_BATCH_GAP_GROWTH 2
/* A trial is held to the best of this many plain batches: single batches vary, nearly always slower. */
#define MGPU_FIT_BATCH_BASE 2
/* Batches within this factor of the trials' size compare with them; others start them over. */
#define MGPU_FIT_BATCH_SIZES 2
/* Chunk rates spread over chunks of this share of the first at least: a range's cut end is latency. */
#define MGPU_FIT_SPREAD_MIN_SHARE 0.5
/* The slowest chunk rate seen drifts back up by this fraction per chunk. */
#define MGPU_SLOW_DRIFT 0.05
/* MGPU_RESERVE_THREADS=auto: batches timed for each way before the choice
 * (MGPU_RESERVE_TRIALS, in mgpurt.h, counts them over all ways);
 * how much faster a way with more workers out must be to be kept; every how
 * many batches another way is timed again. */
#define MGPU_RESERVE_RUNS_PER_WAY 2
#define MGPU_RESERVE_MARGIN 1.01
#define MGPU_RESERVE_REFRESH 16
/* Each refresh that finds the same way fastest as the last one doubles the
 * gap to the next, up to this many batches: a stable kernel stops paying
 * for slower ways, and a change of the fastest way restarts the gap at
 * MGPU_RESERVE_REFRESH. */
#define MGPU_RESERVE_REFRESH_MAX 256
/* A way's speed is the best of its last this many timed batches: with
 * fewer, the kept way's own noisy times flip the choice to a slower way
 * again and again (doc/tuning.md, "Internal constants"). */
#define MGPU_RESERVE_KEEP 8
/* Each refresh that finds the same way fastest makes the next gap this many times the last. */
#define MGPU_RESERVE_REFRESH_GROWTH 2
/* Batches within this factor of the timed size compare: throughput depends on the size. */
#define MGPU_RESERVE_SIZES 2
/* Cost profiles (mgpu__prof_cuts): the spread of bin costs, and the
 * smoothness against half the step, that tell items differing in cost by
 * position from noise; and how many bins either side a bin's cost reaches
 * (mgpu__cost_init). */
#define MGPU_PROF_SPREAD 6.0
#define MGPU_PROF_SMOOTH 4.0
#define MGPU_COST_REACH 2
/* A cost profile's parts of a batch: enough to follow a cost's shape, few enough to learn each. */
#define MGPU_PROF_BINS 128
/* Fewer learnt bins than this cannot tell a smooth cost from noise. */
#define MGPU_PROF_MIN_BINS 8
/* Bin costs spread over their middle: 1 / this of the bins at each end may be odd slow chunks. */
#define MGPU_PROF_TRIM 10
/* Each batch moves a bin this share of the way: one batch's measure of a bin is rough. */
#define MGPU_PROF_BLEND 0.5
/* A cost is reached within this share of the total: sums of bin costs round. */
#define MGPU_COST_ROUNDING 1e-12

/* Halving (split.c) stops after this many steps, past any tolerance a double holds. */
#define MGPU_HALVE_STEPS 200
/* The split's common finish time is found within this share of itself: far under an item. */
#define MGPU_FINISH_TOL 1e-12
/* A thief's share is found within this share of itself (or of one item): far under an item. */
#define MGPU_STEAL_TOL 1e-9
/* A share this close under a whole item counts as it: rounding must not lose an item. */
#define MGPU_ITEM_ROUNDING 1e-6

#endif /* MGPU_TUNABLES_H */
