/* SPDX-License-Identifier: MIT */
/*
 * Lab L7: the switch, flush and lazy protocol of mm/tlb.c, as a Promela
 * model for SPIN (labs/L7-model.md is the handout).
 *
 * What is modelled
 *   CPU 0 runs the thread of address space X that changes X's mapping of
 *   one page, twice: round 1 moves the page to a new frame (tables kept),
 *   round 2 unmaps it and frees the page table that held it (tables freed).
 *   Each round is tlb_batch_flush: change, flush_tlb_mm_range, and only
 *   then free. CPU 0 keeps X loaded the whole time and flushes itself in
 *   step 4, so its own TLB is not modelled.
 *   CPUs 1 .. NCPU-1 run whatever the scheduler picks, forever: a thread
 *   of X, a thread of Y (a second address space, never changed, there to
 *   compete for the ASID slots), or a kernel thread. They switch
 *   (switch_mm_irqs_off), read their thread's page, walk X's tables
 *   speculatively while X is loaded, and take flush requests.
 *
 * What a TLB holds, per CPU and ASID slot
 *   tlb_owner/tlb_version  the cached translation of the page: whose it
 *                          is (X or Y) and, for X, the version of the
 *                          mapping it was read from (version v is the one
 *                          made in generation v)
 *   walk_cached            a paging-structure cache entry: the walk to
 *                          X's page table, usable even once the table
 *                          is unlinked (SDM Vol. 3A 4.10.3)
 *   kernel_mm runs on PCID 0, which holds no user translations.
 *
 * The property (the assertions in use_x_page, use_y_page, walk_x_tables)
 *   (P1) no CPU uses a translation of X older than the generation it has
 *        acknowledged in a flush request;
 *   (P2) no CPU uses a translation to a freed frame;
 *   (P3) no CPU walks through a freed page table;
 *   (P4) no CPU uses a translation of another address space than the
 *        one its thread runs in;
 * and two that say the model's handler is mm/tlb.c's (check_handler):
 *   (P5) a LAZY CPU that gets a request leaves X for kernel_mm;
 *   (P6) a request flushes no more than mm/tlb.c's handler: an up-to-date
 *        CPU keeps its slot as it is; a CPU exactly one behind that gets
 *        the newest request drops the page (drop_page) and keeps X's
 *        other page, and records the request's generation;
 * and one that says how the flusher reads:
 *   (P7) the flusher looks (look_at) at every CPU of the mask it copied.
 * -DWITNESS_SWITCH_IN_CHOICE asserts that no CPU of the copied mask
 * starts a switch before the flusher looked at it (W1): the model must
 * break it, since the kernel's loads are separate steps.
 *
 * What is left out (the handout asks what each could hide): store
 * buffers (SPIN runs every statement in one global order, sequentially
 * consistent, so a missing fence cannot show; tests/host/tlb_sim has
 * x86-TSO), the call queue behind tlb_hw_call, page ranges and the
 * flush ceiling (one changing page: a partial flush drops it and this
 * PCID's cached walks, a full one X's other page too, which is never
 * used, only looked at by P6), more than one flusher, teardown, and
 * kernel mappings.
 *
 * Steps: each atomic block, and each statement outside one, is one step
 * of one CPU; SPIN tries every order of the steps of all CPUs. A CPU's
 * steps are cut where another CPU could tell the difference (a store or
 * load of loaded_mm, is_lazy, the mask, tlb_gen, the page tables).
 *
 * The lazy policy: a kernel thread may keep the user mm loaded (LAZY) or
 * switch to kernel_mm, and the model tries both at every kernel thread,
 * so the runs of lazy=skip, lazy=off and lazy=dynamic's back-off are all
 * among its runs; the flusher skips LAZY CPUs as lazy=skip does
 * (lazy_skipped_by), the one policy that skips them.
 *
 * Switches: -DNCPU=3 (two scheduled CPUs), -DASID_SLOTS=2, and one
 * -DBUG_<NAME> per tlb_bug= of mm/tlb.c; BUG_SKIP_SWITCHING is the
 * model's own: a flusher that skips SWITCHING CPUs (CVE-2025-37964).
 * tools/labs/spin_check.py runs them all; --trail NAME prints a counterexample.
 */

#ifndef NCPU
#define NCPU 2
#endif
/* One slot: switching between X and Y recycles it every time. */
#ifndef ASID_SLOTS
#define ASID_SLOTS 1
#endif
#define ROUNDS 2 /* round 1: a new frame; round 2: unmapped, table freed */

/* The injected bugs: each is a constant, tested where mm/tlb.c asks
 * INJECTED(tlb, ...), so there is one code path and the switch picks
 * the branch. */
#ifdef BUG_SKIP_REMOTE
#define bug_skip_remote true
#else
#define bug_skip_remote false
#endif
#ifdef BUG_NO_WAIT
#define bug_no_wait true
#else
#define bug_no_wait false
#endif
#ifdef BUG_ACK_BEFORE_FLUSH
#define bug_ack_before_flush true
#else
#define bug_ack_before_flush false
#endif
#ifdef BUG_NO_GEN_CHECK
#define bug_no_gen_check true
#else
#define bug_no_gen_check false
#endif
#ifdef BUG_REUSE_ASID_NOFLUSH
#define bug_reuse_asid_noflush true
#else
#define bug_reuse_asid_noflush false
#endif
#ifdef BUG_LAZY_SKIP_FREED_TABLES
#define bug_lazy_skip_freed_tables true
#else
#define bug_lazy_skip_freed_tables false
#endif
#ifdef BUG_FREE_BEFORE_ACK
#define bug_free_before_ack true
#else
#define bug_free_before_ack false
#endif
#ifdef BUG_SKIP_SWITCHING
#define bug_skip_switching true
#else
#define bug_skip_switching false
#endif

/*
 * Values of loaded_mm and of a slot's context, what the scheduler may run
 * next, and what switch_mm_irqs_off decided to do (its three cases). An
 * mtype, so that traces print names.
 */
mtype = {
	NO_MM,		/* a slot or TLB entry nobody used yet */
	KERNEL_MM,	/* kernel_mm: PCID 0, never in a slot */
	MM_X,		/* the address space whose page changes */
	MM_Y,		/* another one, never changed */
	SWITCHING,	/* TLB_MM_SWITCHING */
	KTHREAD,	/* switch_mm_irqs_off(NULL): a kernel thread */
	SWITCH_NOTHING,
	SWITCH_LOAD,	/* load_mm */
	SWITCH_CATCH_UP /* leave_lazy */
};

#define PTE_NONE 255 /* X's page is unmapped (round 2) */

typedef tlb_cpu {
	/* read by the flusher (cpu_needs_flush) */
	mtype loaded_mm;
	bool is_lazy;
	/* the owner's alone */
	byte loaded_asid;
	byte next_asid;
	mtype slot_ctx[ASID_SLOTS];
	byte slot_gen[ASID_SLOTS];
	/* the hardware's: what the TLB holds (see the top) */
	mtype tlb_owner[ASID_SLOTS];
	byte tlb_version[ASID_SLOTS];
	bool walk_cached[ASID_SLOTS];
	/* X's other page, never changed: there only to tell a one-page
	 * flush (which keeps it) from a whole-context one (P6) */
	bool other_cached[ASID_SLOTS];
	/* the flush request the flusher left for this CPU (its new_gen:
	 * flush_tlb_here reads nothing else of it here), and its IPI */
	bool ipi_pending;
	byte req_gen;
	/* the highest generation this CPU acknowledged (P1) */
	byte acked_gen;
	/* BUG_ACK_BEFORE_FLUSH: acknowledged, not flushed yet, and the
	 * copy of the request taken when acknowledging (tlb_cpu.acked) */
	bool held;
	byte held_gen;
};

tlb_cpu cpu[NCPU];

/* Address space X: its generation, its mask, its one page. */
byte x_tlb_gen;
bool x_cpu_mask[NCPU];
byte x_pte;		   /* the version of the mapping, or PTE_NONE */
bool x_table_linked = true; /* the page table is reachable from X's root */
/* Frame v holds version v of the page; the one page table maps it until
 * round 2 unlinks it. Freed means: reused by someone else from then on. */
bool frame_freed[ROUNDS];
bool table_freed;
/* Requests sent and not acknowledged yet (the call's wait). */
byte outstanding;
/* Flush step 3: the flusher's copy of X's mask, and (a ghost) which of
 * its CPUs it has looked at since (look_at; P7 and the witness). */
bool mask_seen[NCPU];
bool looked[NCPU];

/* --- The TLB of one CPU ------------------------------------------------- */

/* A CR3 load without the no-flush bit, or INVPCID/INVLPG in this PCID:
 * the slot's translations and cached walks are gone (SDM 4.10.4.1). */
inline drop_slot(c, s)
{
	cpu[c].tlb_owner[s] = NO_MM;
	cpu[c].tlb_version[s] = 0;
	cpu[c].walk_cached[s] = false;
	cpu[c].other_cached[s] = false
}

/* INVLPG of the page (or INVPCID type 0) in this PCID: its translation
 * and every cached walk of the PCID go; the other page's entry stays. */
inline drop_page(c, s)
{
	cpu[c].tlb_owner[s] = NO_MM;
	cpu[c].tlb_version[s] = 0;
	cpu[c].walk_cached[s] = false
}

/* A walk of X's tables in slot s: through the cached walk if there is
 * one, else from X's root, which reaches the table only while linked. */
inline walk_x_tables(c, s)
{
	if
	:: cpu[c].walk_cached[s] ->
		printf("cpu%d walks X's table through its cached walk\n", c);
		assert(!table_freed); /* P3 */
	:: else ->
		if
		:: x_table_linked ->
			printf("cpu%d walks X's table from the root\n", c);
			cpu[c].walk_cached[s] = true
		:: else -> skip /* nothing mapped there any more */
		fi
	fi
}

/* A thread of X reads its page. A TLB hit uses the cached translation;
 * a miss walks and caches what the page table holds now, or faults. */
inline use_x_page(c)
{
	slot = cpu[c].loaded_asid;
	assert(cpu[c].tlb_owner[slot] != MM_Y); /* P4 */
	if
	:: cpu[c].tlb_owner[slot] == MM_X ->
		printf("cpu%d reads X's page through its TLB: version %d\n",
		       c, cpu[c].tlb_version[slot]);
		assert(!frame_freed[cpu[c].tlb_version[slot]]); /* P2 */
		assert(cpu[c].tlb_version[slot] >= cpu[c].acked_gen); /* P1 */
	:: else ->
		walk_x_tables(c, slot);
		if
		:: cpu[c].walk_cached[slot] && x_pte != PTE_NONE ->
			printf("cpu%d caches X's page: version %d\n", c, x_pte);
			cpu[c].tlb_owner[slot] = MM_X;
			cpu[c].tlb_version[slot] = x_pte;
			cpu[c].other_cached[slot] = true
		:: else ->
			printf("cpu%d: X's page is not mapped (a fault)\n", c)
		fi
	fi;
	slot = 0
}

/* A thread of Y reads its page, which never changes. */
inline use_y_page(c)
{
	slot = cpu[c].loaded_asid;
	assert(cpu[c].tlb_owner[slot] != MM_X); /* P4 */
	printf("cpu%d reads Y's page\n", c);
	cpu[c].tlb_owner[slot] = MM_Y;
	slot = 0
}

/* --- Switching (switch_mm_irqs_off, load_mm, enter_lazy, leave_lazy) ---- */

/* Switch step 4 (choose_asid): the slot holding next_mm (a hit: flush
 * only if it is behind the generation read in step 3), else the next
 * slot round-robin (a miss: flush whatever it held). */
inline choose_asid(c, next_mm)
{
	slot = 0;
	do
	:: slot < ASID_SLOTS && cpu[c].slot_ctx[slot] != next_mm -> slot++
	:: else -> break
	od;
	if
	:: slot < ASID_SLOTS ->
		flush_slot = cpu[c].slot_gen[slot] < gen_read &&
			     !bug_no_gen_check
	:: else ->
		slot = cpu[c].next_asid;
		cpu[c].next_asid = (slot + 1) % ASID_SLOTS;
		flush_slot = !bug_reuse_asid_noflush
	fi
}

/*
 * Switch step 1 (load_mm): is_lazy = false, loaded_mm = SWITCHING; prev
 * is what was loaded. The caller decides in the same atomic step that a
 * switch is needed, as switch_mm_irqs_off does with interrupts off.
 */
inline switch_step_1(c)
{
#ifdef WITNESS_SWITCH_IN_CHOICE
	/* reachable only if the flusher's look at this CPU is a step of
	 * its own, after the mask copy */
	assert(!(mask_seen[c] && !looked[c])); /* W1 */
#endif
	printf("cpu%d switch step 1: SWITCHING (from %e)\n", c,
	       cpu[c].loaded_mm);
	prev = cpu[c].loaded_mm;
	cpu[c].is_lazy = false;
	cpu[c].loaded_mm = SWITCHING
}

/*
 * Switch steps 2-6 (load_mm) to next_mm: MM_X, MM_Y or KERNEL_MM. Each
 * atomic block is one step that touches what the flusher reads, so it may
 * run between any two; the rest is this CPU's own state. A flush handler
 * runs all of it inside its own atomic block: interrupts are off there,
 * and the flusher is waiting for it.
 */
inline switch_steps_2_to_6(c, next_mm)
{
	if
	:: next_mm == KERNEL_MM ->
		/* PCID 0 and no mask bit (kernel_mm_mask=skip); switch
		 * step 6: loaded_mm = kernel_mm */
		atomic {
			printf("cpu%d switch step 6: on kernel_mm\n", c);
			cpu[c].loaded_asid = 0;
			cpu[c].loaded_mm = KERNEL_MM
		}
	:: else ->
		if
		:: next_mm == MM_X ->
			/* switch step 2: set our bit in next->cpu_mask (a
			 * locked OR, a full barrier before step 3). Y's mask
			 * is not modelled: nobody flushes Y. */
			atomic {
				printf("cpu%d switch step 2: bit in X's mask\n",
				       c);
				x_cpu_mask[c] = true
			}
		:: else -> skip
		fi;
		/* switch step 3: read next->tlb_gen (Y's stays 0). Steps 4
		 * and 5 touch this CPU's state alone: the same step. */
		atomic {
			if
			:: next_mm == MM_X -> gen_read = x_tlb_gen
			:: else -> gen_read = 0
			fi;
			choose_asid(c, next_mm);
			/* switch step 5: CR3 load, with the no-flush bit
			 * unless choose_asid said flush; record {ctx, gen} */
			if
			:: flush_slot ->
				drop_slot(c, slot);
				printf("cpu%d switch steps 3-5: %e gen %d, slot %d, CR3 load flushes it\n",
				       c, next_mm, gen_read, slot)
			:: else ->
				printf("cpu%d switch steps 3-5: %e gen %d, slot %d, CR3 load keeps it\n",
				       c, next_mm, gen_read, slot)
			fi;
			cpu[c].slot_ctx[slot] = next_mm;
			cpu[c].slot_gen[slot] = gen_read;
			cpu[c].loaded_asid = slot;
			gen_read = 0;
			slot = 0;
			flush_slot = false
		};
		/* switch step 6: loaded_mm = next (a release) */
		atomic {
			printf("cpu%d switch step 6: on %e\n", c, next_mm);
			cpu[c].loaded_mm = next_mm
		}
	fi;
	/* switch step 6, end: clear our bit in prev->cpu_mask */
	if
	:: prev == MM_X -> x_cpu_mask[c] = false
	:: else -> skip
	fi;
	prev = NO_MM
}

/* leave_lazy, after its is_lazy = false: the fence, then compare
 * generations and catch up (a thread of X is back on a CPU that kept X
 * loaded under a kernel thread). */
inline leave_lazy_catch_up(c)
{
	slot = cpu[c].loaded_asid;
	if
	:: cpu[c].slot_gen[slot] < x_tlb_gen && !bug_no_gen_check ->
		printf("cpu%d leaves lazy: slot gen %d < X gen %d, flushes\n",
		       c, cpu[c].slot_gen[slot], x_tlb_gen);
		drop_slot(c, slot);
		cpu[c].slot_gen[slot] = x_tlb_gen
	:: else ->
		printf("cpu%d leaves lazy: slot gen %d, X gen %d, keeps\n", c,
		       cpu[c].slot_gen[slot], x_tlb_gen)
	fi;
	slot = 0
}

/* --- A target handles the request (flush_tlb_here) -------------------- */

/* The cases at the top of mm/tlb.c, for the request of request_gen. */
inline flush_tlb_here(c, request_gen)
{
	/* LAB(L7) begin: flush_tlb_here: not loaded, lazy, up to date, one
	 * page, or the whole context */
	if
	:: cpu[c].loaded_mm != MM_X ->
		/* X is not loaded here any more: switching back to it
		 * compares generations (switch step 4) */
		printf("cpu%d request gen %d: X not loaded, nothing\n", c,
		       request_gen)
	:: cpu[c].loaded_mm == MM_X && cpu[c].is_lazy ->
		/* LAZY: leave for kernel_mm, as cheap as flushing */
		printf("cpu%d request gen %d: lazy, leaves for kernel_mm\n",
		       c, request_gen);
		switch_step_1(c);
		switch_steps_2_to_6(c, KERNEL_MM)
	:: cpu[c].loaded_mm == MM_X && !cpu[c].is_lazy ->
		slot = cpu[c].loaded_asid;
		if
		:: cpu[c].slot_gen[slot] >= x_tlb_gen ->
			/* an earlier flush covered this one */
			printf("cpu%d request gen %d: up to date\n", c,
			       request_gen)
		:: cpu[c].slot_gen[slot] < x_tlb_gen &&
		   request_gen == cpu[c].slot_gen[slot] + 1 &&
		   request_gen == x_tlb_gen ->
			/* one behind, and this is the newest request: the
			 * page alone (INVLPG), which also drops the cached
			 * walks of this PCID; record the request's gen */
			printf("cpu%d request gen %d: flushes the page\n", c,
			       request_gen);
			drop_page(c, slot);
			cpu[c].slot_gen[slot] = request_gen
		:: else ->
			/* further behind, or not the newest: the whole
			 * context, and record the mm's gen read first */
			printf("cpu%d request gen %d: flushes the context\n",
			       c, request_gen);
			drop_slot(c, slot);
			cpu[c].slot_gen[slot] = x_tlb_gen
		fi;
		slot = 0
	fi
	/* LAB(L7) end */
}

/* tlb_bug=ack_before_flush: what was acknowledged is flushed at the
 * CPU's next TLB event (flush_acked_now); called inside atomic steps. */
inline flush_acked_now(c)
{
	if
	:: cpu[c].held ->
		printf("cpu%d flushes what it acknowledged\n", c);
		cpu[c].held = false;
		flush_tlb_here(c, cpu[c].held_gen)
	:: else -> skip
	fi
}

/*
 * switch_mm_irqs_off(next), first step: the scheduler picks the thread,
 * and the CPU decides what the switch does (how), starting it in the same
 * step: switch step 1, enter_lazy's is_lazy = true, or leave_lazy's
 * is_lazy = false. Interrupts stay off until the switch ends.
 */
inline switch_mm_irqs_off_decide(c)
{
	if
	:: next = MM_X
	:: next = MM_Y
	:: next = KTHREAD
	fi;
	flush_acked_now(c);
	if
	:: next == KTHREAD ->
		if
		:: cpu[c].loaded_mm == KERNEL_MM || cpu[c].is_lazy ->
			how = SWITCH_NOTHING
		:: else ->
			/* enter_lazy: keep the mm (lazy_keeps_mm), or go
			 * to kernel_mm (lazy=off, dynamic's back-off) */
			if
			:: printf("cpu%d kernel thread: lazy on %e\n", c,
				  cpu[c].loaded_mm);
				cpu[c].is_lazy = true;
				how = SWITCH_NOTHING
			:: printf("cpu%d kernel thread: leaves %e\n", c,
				  cpu[c].loaded_mm);
				next = KERNEL_MM;
				switch_step_1(c);
				how = SWITCH_LOAD
			fi
		fi
	:: next != KTHREAD && next != cpu[c].loaded_mm ->
		switch_step_1(c);
		how = SWITCH_LOAD
	:: next != KTHREAD && next == cpu[c].loaded_mm && cpu[c].is_lazy ->
		/* leave_lazy: is_lazy = false, then (next step) the fence */
		cpu[c].is_lazy = false;
		how = SWITCH_CATCH_UP
	:: next != KTHREAD && next == cpu[c].loaded_mm && !cpu[c].is_lazy ->
		how = SWITCH_NOTHING
	fi
}

/* The rest of switch_mm_irqs_off, as decided. */
inline switch_mm_irqs_off_finish(c)
{
	if
	:: how == SWITCH_LOAD -> switch_steps_2_to_6(c, next)
	:: how == SWITCH_CATCH_UP && next == MM_X ->
		atomic { leave_lazy_catch_up(c) }
	:: else -> skip /* Y never changes: nothing to catch up */
	fi;
	how = SWITCH_NOTHING;
	next = NO_MM
}

/*
 * What mm/tlb.c's handler must do with a request, told from what the
 * model's handler did (P5, P6): a handler that flushes more than the
 * kernel's, or stays on X while LAZY, keeps P1-P4 in this model, and is
 * still not the protocol being modelled.
 */
#define EXPECT_ANY   0 /* not loaded, or the whole context */
#define EXPECT_LEAVE 1 /* LAZY: leaves X for kernel_mm */
#define EXPECT_KEEP  2 /* up to date: the slot and its entries stay */
#define EXPECT_PAGE  3 /* one behind, the newest request: the page alone */

inline expect_of_handler(c)
{
	expect_slot = cpu[c].loaded_asid;
	if
	:: cpu[c].loaded_mm == MM_X && cpu[c].is_lazy -> expect = EXPECT_LEAVE
	:: cpu[c].loaded_mm == MM_X && !cpu[c].is_lazy &&
	   cpu[c].slot_gen[expect_slot] >= x_tlb_gen -> expect = EXPECT_KEEP
	:: cpu[c].loaded_mm == MM_X && !cpu[c].is_lazy &&
	   cpu[c].slot_gen[expect_slot] < x_tlb_gen &&
	   cpu[c].req_gen == cpu[c].slot_gen[expect_slot] + 1 &&
	   cpu[c].req_gen == x_tlb_gen -> expect = EXPECT_PAGE
	:: else -> expect = EXPECT_ANY
	fi;
	kept_owner = cpu[c].tlb_owner[expect_slot];
	kept_version = cpu[c].tlb_version[expect_slot];
	kept_walk = cpu[c].walk_cached[expect_slot];
	kept_other = cpu[c].other_cached[expect_slot];
	kept_gen = cpu[c].slot_gen[expect_slot]
}

inline check_handler(c)
{
	if
	:: expect == EXPECT_LEAVE ->
		assert(cpu[c].loaded_mm == KERNEL_MM); /* P5 */
	:: expect == EXPECT_KEEP ->
		assert(cpu[c].tlb_owner[expect_slot] == kept_owner &&
		       cpu[c].tlb_version[expect_slot] == kept_version &&
		       cpu[c].walk_cached[expect_slot] == kept_walk &&
		       cpu[c].other_cached[expect_slot] == kept_other &&
		       cpu[c].slot_gen[expect_slot] == kept_gen); /* P6 */
	:: expect == EXPECT_PAGE ->
		assert(cpu[c].tlb_owner[expect_slot] != MM_X &&
		       cpu[c].other_cached[expect_slot] == kept_other &&
		       cpu[c].slot_gen[expect_slot] == cpu[c].req_gen); /* P6 */
	:: else -> skip
	fi;
	expect = EXPECT_ANY;
	expect_slot = 0;
	kept_owner = NO_MM;
	kept_version = 0;
	kept_walk = false;
	kept_other = false;
	kept_gen = 0
}

/* The IPI is taken: the handler runs with interrupts off, then the call
 * is acknowledged (under BUG_ACK_BEFORE_FLUSH: acknowledged first, and
 * the flush held for the next TLB event, as ack_here does). */
inline take_flush_ipi(c)
{
	if
	:: bug_ack_before_flush ->
		flush_acked_now(c);
		printf("cpu%d acknowledges gen %d, flushes later\n", c,
		       cpu[c].req_gen);
		cpu[c].held = true;
		cpu[c].held_gen = cpu[c].req_gen
	:: else ->
		expect_of_handler(c);
		flush_tlb_here(c, cpu[c].req_gen);
		check_handler(c)
	fi;
	if
	:: cpu[c].req_gen > cpu[c].acked_gen ->
		cpu[c].acked_gen = cpu[c].req_gen
	:: else -> skip
	fi;
	cpu[c].ipi_pending = false;
	outstanding--
}

/* A CPU the scheduler drives: each option is one thing it may do next,
 * in any order, for ever (the flusher's rounds bound what changes). */
proctype scheduled_cpu(byte c)
{
	mtype next = NO_MM, how = SWITCH_NOTHING, prev = NO_MM;
	byte gen_read, slot;
	bool flush_slot;
	/* what the handler must do, and the slot before it (P5, P6) */
	byte expect, expect_slot, kept_version, kept_gen;
	mtype kept_owner = NO_MM;
	bool kept_walk, kept_other;

end_running:
	do
	:: atomic { switch_mm_irqs_off_decide(c) };
		switch_mm_irqs_off_finish(c)
	:: atomic {
		cpu[c].loaded_mm == MM_X && !cpu[c].is_lazy -> use_x_page(c)
	   }
	:: atomic {
		cpu[c].loaded_mm == MM_Y && !cpu[c].is_lazy -> use_y_page(c)
	   }
	:: atomic {
		/* the page walker runs ahead, also under a kernel thread */
		cpu[c].loaded_mm == MM_X ->
		walk_x_tables(c, cpu[c].loaded_asid)
	   }
	:: atomic { cpu[c].ipi_pending -> take_flush_ipi(c) }
	:: atomic {
		/* tlb_timer_tick */
		bug_ack_before_flush && cpu[c].held -> flush_acked_now(c)
	   }
	od
}

/* --- The flusher (tlb_batch_flush, flush_tlb_mm_range) ----------------- */

/* Flush step 3's look at one CPU: its loaded_mm, into seen, in one step
 * (the kernel's acquire load). choose_targets reads another CPU's
 * loaded_mm only through it (P7). */
inline look_at(t)
{
	atomic {
		seen = cpu[t].loaded_mm;
		looked[t] = true
	}
}

/* Flush step 3: cpu_needs_flush for each CPU in the mask copied, but
 * this one; sets want[cpu] for each CPU that must get the request. */
inline choose_targets()
{
	/* LAB(L7) begin: flush step 3: which CPUs of X's cpu_mask get the
	 * request (cpu_needs_flush) */
	atomic {
		target = 0;
		do
		:: target < NCPU ->
			mask_seen[target] = x_cpu_mask[target];
			target++
		:: else -> break
		od
	};
	target = 1;
	do
	:: target < NCPU && !mask_seen[target] ->
		printf("flusher: cpu%d is not in X's mask\n", target);
		target++
	:: target < NCPU && mask_seen[target] && bug_skip_remote ->
		target++
	:: target < NCPU && mask_seen[target] && !bug_skip_remote ->
		look_at(target);
		if
		:: seen == SWITCHING ->
			/* it may have read the gen before our bump and be
			 * about to load CR3 with the no-flush bit */
			printf("flusher: cpu%d is SWITCHING\n", target);
			want[target] = !bug_skip_switching
		:: seen != SWITCHING && seen != MM_X ->
			/* left X: its slot for X records an older gen */
			printf("flusher: cpu%d is on %e, skipped\n", target,
			       seen)
		:: seen == MM_X ->
			/* lazy_skipped_by: lazy=skip, unless tables freed */
			if
			:: cpu[target].is_lazy &&
			   (!freed_tables || bug_lazy_skip_freed_tables) ->
				printf("flusher: cpu%d is lazy, skipped\n",
				       target)
			:: else ->
				printf("flusher: cpu%d is on X\n", target);
				want[target] = true
			fi
		fi;
		seen = NO_MM;
		target++
	:: else -> break
	od;
	target = 0
	/* LAB(L7) end */
}

/* What tlb_batch_flush frees: the frame the old mapping pointed to, and
 * in round 2 the page table too. */
inline free_old_pages()
{
	atomic {
		printf("flusher frees frame %d\n", round - 1);
		frame_freed[round - 1] = true;
		if
		:: freed_tables ->
			printf("flusher frees X's page table\n");
			table_freed = true
		:: else -> skip
		fi
	}
}

/* CPU 0's thread of X: ROUNDS changes, each one tlb_batch_flush (flush
 * steps 1-4, then the frees). */
proctype flusher()
{
	byte round = 1, new_gen, target;
	mtype seen = NO_MM;
	bool freed_tables;
	bool want[NCPU];

	do
	:: round <= ROUNDS ->
		/* flush step 1: the caller changes the page tables */
		atomic {
			if
			:: round == 1 ->
				printf("flusher moves X's page to frame 1\n");
				x_pte = 1
			:: else ->
				printf("flusher unmaps X's page and unlinks its table\n");
				x_pte = PTE_NONE;
				x_table_linked = false;
				freed_tables = true
			fi
		};
		if
		:: bug_free_before_ack -> free_old_pages()
		:: else -> skip
		fi;
		/* flush step 2: new_gen = ++mm->tlb_gen (a locked add: a
		 * full barrier after step 1, before the loads of step 3) */
		atomic {
			x_tlb_gen++;
			new_gen = x_tlb_gen;
			printf("flusher bumps X's tlb_gen to %d\n", new_gen)
		};
		choose_targets();
		/* flush step 4: the request to every target, the flush here
		 * (CPU 0's own TLB, not modelled), then the wait for all */
		atomic {
			target = 1;
			do
			:: target < NCPU && want[target] ->
				printf("flusher sends gen %d to cpu%d\n",
				       new_gen, target);
				cpu[target].req_gen = new_gen;
				if
				:: !cpu[target].ipi_pending ->
					cpu[target].ipi_pending = true;
					outstanding++
				:: else -> skip /* the unread one is lost */
				fi;
				want[target] = false;
				assert(!mask_seen[target] || bug_skip_remote ||
				       looked[target]); /* P7 */
				mask_seen[target] = false;
				looked[target] = false;
				target++
			:: target < NCPU && !want[target] ->
				assert(!mask_seen[target] || bug_skip_remote ||
				       looked[target]); /* P7 */
				mask_seen[target] = false;
				looked[target] = false;
				target++
			:: else -> break
			od;
			mask_seen[0] = false;
			target = 0
		};
		if
		:: bug_no_wait -> printf("flusher does not wait\n")
		:: else -> outstanding == 0
		fi;
		/* tlb_batch_flush: free only after every acknowledgement */
		if
		:: bug_free_before_ack -> skip
		:: else -> free_old_pages()
		fi;
		round++
	:: else -> break
	od
}

init
{
	byte c, s;

	atomic {
		/* CPU 0: the flusher's thread of X, running */
		cpu[0].loaded_mm = MM_X;
		x_cpu_mask[0] = true;
		/* the others start on kernel_mm with empty slots and TLBs */
		c = 0;
		do
		:: c < NCPU ->
			if
			:: c > 0 -> cpu[c].loaded_mm = KERNEL_MM
			:: else -> skip
			fi;
			s = 0;
			do
			:: s < ASID_SLOTS ->
				cpu[c].slot_ctx[s] = NO_MM;
				cpu[c].tlb_owner[s] = NO_MM;
				s++
			:: else -> break
			od;
			c++
		:: else -> break
		od;
		run flusher();
		c = 1;
		do
		:: c < NCPU -> run scheduled_cpu(c); c++
		:: else -> break
		od
	}
}
