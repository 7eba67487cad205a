/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tunables.h: lib's named constants, each with its reason; the measurements
 * behind the scheduler's are in doc/tuning.md ("Internal constants").
 */
#ifndef MGPU_TUNABLES_H
#define MGPU_TUNABLES_H

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
/* An overrun under this many seconds past the slack is confirmed by the next
 * piece, of as many items, before anything is handed back: a thread held up
 * for a time slice runs its next piece on time, and one stall would otherwise
 * cost the batch many times over. */
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

/* A thief picks a victim at most this many times: another thief can empty the
 * range it picked before it takes that range's lock. */
#define MGPU_STEAL_ATTEMPTS 4
/* Bytes a slot's item cap counts per item past the item's own: a margin for
 * rounding each array of a chunk up to MGPU_ALIGN_DEV. */
#define MGPU_ROOM_PAD_PER_ITEM ((size_t)(3 * MGPU_ALIGN_DEV) / 8 + 1)
/* An item's cost to a CPU worker that handed it back is at least this share
 * of the time over the items: a cost per call learnt elsewhere may be more. */
#define MGPU_ITEM_COST_MIN_SHARE 0.1

/* Settings (config.c): chunks in flight per GPU by default, one copying in,
 * one computing and one copying out. */
#define MGPU_STREAMS_DEFAULT 3
/* Bytes of an emulated device by default. */
#define MGPU_EMULATE_MEM_DEFAULT (1LL << 30)
/* MGPU_TIMEOUT=auto: a deadline is this many times the predicted time
 * (mgpurt.h, MGPU_TIMEOUT_AUTO). */
#define MGPU_TIMEOUT_FACTOR 10.0
/* The settings' bounds, far past any value that makes sense, so that a
 * mistyped one is refused; the settings' texts in config.c spell them too. */
#define MGPU_THREADS_MAX 4096
#define MGPU_STREAMS_MAX 32
#define MGPU_RATIO_MAX 1e7
#define MGPU_SHARE_MAX 1e12
#define MGPU_TIMEOUT_MAX_S 1e6
#define MGPU_EMULATE_SPEED_MAX 1e12
#define MGPU_EMULATE_MEM_MIN (1LL << 20)
#define MGPU_EMULATE_MEM_MAX (1LL << 40)
#define MGPU_EMULATE_LATENCY_MAX_S 10.0
#define MGPU_FAULT_K_MAX (1LL << 40)
/* The longest nap (s), decades: a longer one is clipped to it rather than
 * overflow time_t and return at once. */
#define MGPU_NAP_MAX_S 1e9
/* A cgroup quota within this of a whole count of CPUs is that count: the
 * quota over the period need not divide exactly. */
#define MGPU_QUOTA_ROUND_EPS 1e-9
/* The CUDA back end's prior device-to-core ratio (device_cuda.c): a CPU core
 * is taken as this many useful lanes at this clock (kHz), a GPU whose clock is
 * not known as one at a typical boost clock, and the ratio kept within these
 * bounds. */
#define MGPU_CPU_LANES 4.0
#define MGPU_CPU_CLOCK_KHZ 3.0e6
#define MGPU_GPU_CLOCK_KHZ_GUESS 1.5e6
#define MGPU_RATIO_GUESS_MIN 1.0
#define MGPU_RATIO_GUESS_MAX 5000.0

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
/* Or over this many times its rate, where it spent over MGPU_FIT_BESIDE_SHARE
 * of its span before the held one's end and was credited under the rest of
 * the held one's time: launches side by side end as the host issued them. A
 * pipelined chunk (copy in, kernel, copy out) hides at most two of its three
 * stages, so is credited at most three times a solo chunk's rate. */
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
/* Floor trials of a GPU's chunks by whole batches (fit.c, mgpu__fit_batch):
 * after this many plain batches of the saturated fit, a batch runs chunks
 * MGPU_FIT_GROWTH times larger, kept at MGPU_FIT_RISE times the best of the
 * last MGPU_FIT_BATCH_BASE plain batches; a kept floor is tried
 * MGPU_FIT_GROWTH times lower and kept at MGPU_FIT_TRIAL_KEEP. */
#define MGPU_FIT_BATCH_PLAIN 2
/* A trial up needs this many chunks in the last plain batch, and rates that
 * span MGPU_FIT_BATCH_SPREAD or more (items that differ in cost by position)
 * or a line MGPU_FIT_RISE faster at the larger size: elsewhere single chunks
 * judge the size (size_class), and a trial would only cost a batch of chunks
 * too large to overlap their copies. */
#define MGPU_FIT_BATCH_CHUNKS 4
#define MGPU_FIT_BATCH_SPREAD 10.0
/* A trial not kept waits this many batches for the next, doubling up to
 * MGPU_FIT_BATCH_GAP_MAX. */
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
 * again and again. */
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

/* A GPU's growing chunks (fit.c, proven_size): the timing noise, as a share
 * of a chunk's time, under which a time is taken as not grown; the next
 * chunk may cost this many times the smaller class's time; and it is at most
 * this many times the largest class, so that the knee is still found between
 * classes (farther leaps left the knee unmeasured and the split unsettled). */
#define MGPU_PROBE_NOISE 0.02
#define MGPU_PROBE_BUDGET 8.0
#define MGPU_PROBE_JUMP 16.0

/* The model store: in a long run, the first submit or mgpu_run this long
 * (s) after the last write writes what was learnt since; an entry older than
 * this (s) is another machine's past, not a prior. */
#define MGPU_STORE_PERIOD_S 5.0
#define MGPU_STORE_MAX_AGE_S (30 * 86400.0)

/* ---------------------------------------- workers, data, runtime, ranks */
/* Seconds of work a CPU worker's chunk is sized to: a claimed chunk is out of
 * the faster workers' reach until its core ends it. */
#define MGPU_CPU_TARGET_S 0.5e-3
/* A completed GPU chunk is credited at least this many seconds, so that no
 * rate drawn from it is infinite. */
#define MGPU_CHUNK_MIN_S 1e-9
/* A device given up: how often its chunks' ends are read while they settle. */
#define MGPU_GIVEUP_POLL_S (MGPU_GIVEUP_SETTLE_S / 10)
/* The watchdog's looks per shortest deadline (MGPU_WATCH_PERIOD_MIN_S and
 * _MAX_S bound the period): a hung device is noticed within a tenth of it. */
#define MGPU_WATCH_PER_DEADLINE 10
/* Staging copies are shared early, from the moment their device waits, on
 * machines of at most this many GPUs (stage.c, shares_early). */
#define MGPU_SHARE_EARLY_GPUS 2
/* Staging copy pieces are whole pages (bytes), so that no two copying threads
 * write one page. */
#define MGPU_COPY_PIECE_ALIGN ((size_t)4096)
/* mgpu_array_sum: elements of the host part per segment, each summed by one
 * call (the segments' sums then in a fixed tree, whatever the thread count),
 * and the bytes before the GPU sum's scratch, where its result lands. */
#define MGPU_SUM_SEGMENT ((size_t)1 << 20)
#define MGPU_SUM_HEAD_BYTES 64
/* A wait for the other ranks polls its MPI request first after this many
 * seconds, doubling up to the most: short waits end soon after the request,
 * long ones cost few wake-ups. */
#define MGPU_DIST_WAIT_FIRST_S 20e-6
#define MGPU_DIST_WAIT_MAX_S 1e-3
/* A steal's fixed cost across ranks (mgpu_init): the median of this many
 * round trips to the next rank, times the round trips a steal makes (the
 * range, the inputs, the outputs, the count), plus a batch's start. */
#define MGPU_RANK_RTT_SAMPLES 9
#define MGPU_RANK_STEAL_TRIPS 6
#define MGPU_RANK_STEAL_START_S 100e-6
/* A rank looks at its batch across ranks this often while its parts run (s),
 * so that it starts the next part before the last one ends; while none runs,
 * the gap doubles up to the most. */
#define MGPU_RANK_POLL_S 5e-4
#define MGPU_RANK_POLL_IDLE_MAX_S 2e-3
/* Before its speed on a kernel is known, a rank's parts are this many times
 * smaller: they cannot be stolen, and the split may have overrated it. */
#define MGPU_RANK_PART_PROBE 8
/* Weight of each new transfer in a rank's decayed mean rate of moving a
 * stolen range's bytes. */
#define MGPU_RANK_BW_WEIGHT 0.5
/* MPI counts are ints: a stolen range's bytes move in pieces of this many. */
#define MGPU_RANK_RMA_PIECE ((size_t)1 << 30)

#endif /* MGPU_TUNABLES_H */
