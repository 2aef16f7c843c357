// SPDX-License-Identifier: MIT
/* Other CPUs: bring-up, per-CPU data, cross-CPU calls, spinlocks. */
#include "tests/ktest.h"
#include "apic/lapic.h"
#include "acpi/acpi.h"
#include "acpi/tables.h"
#include "arch/x86.h"
#include "smp/call.h"
#include "cpu/percpu.h"
#include "sync/spinlock.h"
#include "apic/tsc.h"
#include "trap/trap.h"

static bool need_cpus(struct ktest_context *t, unsigned n)
{
	if (cpu_count >= n)
		return true;
	ktest_skip(t, "needs more CPUs (boot with SMP=2 or more)");
	return false;
}

KTEST(SMP0001, smp, "every CPU the MADT enables is online, once")
{
	const struct madt_info *madt = acpi_madt();
	unsigned enabled = 0;

	if (!madt) {
		KEXPECT(cpu_count == 1, "%u CPUs without a MADT", cpu_count);
		return;
	}
	for (size_t i = 0; i < madt->cpu_count; i++) {
		const struct madt_cpu *c = &madt->cpus[i];
		unsigned found = 0;

		if (!c->enabled)
			continue;
		enabled++;
		for (unsigned cpu = 0; cpu < cpu_count; cpu++)
			found += cpus[cpu]->apic_id == c->apic_id;
		KEXPECT(found == 1, "APIC ID %u is online %u times", c->apic_id,
			found);
	}
	KEXPECT(cpu_count == enabled, "%u online, MADT enables %u", cpu_count,
		enabled);
	KEXPECT(cpumask_weight(&cpu_online_mask) == cpu_count,
		"online mask has %u bits for %u CPUs",
		cpumask_weight(&cpu_online_mask), cpu_count);
}

struct whoami {
	uint32_t apic_id[MAX_CPUS];
	struct percpu *self[MAX_CPUS];
	uint32_t runs[MAX_CPUS];
};

static void record_whoami(void *arg)
{
	struct whoami *w = arg;
	unsigned cpu = this_cpu_index();

	w->apic_id[cpu] = lapic_id();
	w->self[cpu] = this_cpu();
	__atomic_fetch_add(&w->runs[cpu], 1, __ATOMIC_RELAXED);
}

KTEST(SMP0002, smp, "a call to all runs once on every CPU, with its own data")
{
	static struct whoami w;

	__builtin_memset(&w, 0, sizeof(w));
	smp_call_function_all(record_whoami, &w, SMP_CALL_WAIT);
	for (unsigned cpu = 0; cpu < cpu_count; cpu++) {
		KEXPECT(w.runs[cpu] == 1, "CPU %u ran %u times", cpu,
			w.runs[cpu]);
		KEXPECT(w.apic_id[cpu] == cpus[cpu]->apic_id,
			"CPU %u: APIC ID %u, expected %u", cpu, w.apic_id[cpu],
			cpus[cpu]->apic_id);
		KEXPECT(w.self[cpu] == cpus[cpu], "CPU %u: this_cpu %p, %p",
			cpu, (void *)w.self[cpu], (void *)cpus[cpu]);
		for (unsigned other = 0; other < cpu; other++)
			KEXPECT(w.self[cpu] != w.self[other],
				"CPUs %u and %u share per-CPU data", cpu,
				other);
	}
}

KTEST(SMP0003, smp, "a call to a mask runs only there; a call to self runs")
{
	static struct whoami w;
	struct cpumask odd;

	if (!need_cpus(t, 2))
		return;
	__builtin_memset(&w, 0, sizeof(w));
	cpumask_clear_all(&odd);
	for (unsigned cpu = 1; cpu < cpu_count; cpu += 2)
		cpumask_set(&odd, cpu);
	smp_call_function_many(&odd, record_whoami, &w, SMP_CALL_WAIT);
	for (unsigned cpu = 0; cpu < cpu_count; cpu++)
		KEXPECT(w.runs[cpu] == (cpu % 2), "CPU %u ran %u times", cpu,
			w.runs[cpu]);

	smp_call_function_single(this_cpu_index(), record_whoami, &w,
				 SMP_CALL_WAIT);
	KEXPECT(w.runs[this_cpu_index()] == 1, "self ran %u times",
		w.runs[this_cpu_index()]);
}

/* Calls each CPU sends in all, spread over the others. */
#define STORM_CALLS_PER_SENDER 2000

struct storm {
	/* received[sender][receiver] */
	uint32_t received[MAX_CPUS][MAX_CPUS];
	unsigned rounds; /* calls from each CPU to each other CPU */
	uint32_t started;
	uint32_t finished;
};

static struct storm storm;

static void storm_hit(void *arg)
{
	unsigned sender = (unsigned)(uintptr_t)arg;

	__atomic_fetch_add(&storm.received[sender][this_cpu_index()], 1,
			   __ATOMIC_RELAXED);
}

/* Each CPU sends STORM_CALLS calls to every other CPU, without waiting. */
static void storm_sender(void *arg)
{
	unsigned self = this_cpu_index();
	struct cpumask others;

	(void)arg;
	cpumask_copy(&others, &cpu_online_mask);
	cpumask_clear(&others, self);
	__atomic_fetch_add(&storm.started, 1, __ATOMIC_SEQ_CST);
	for (unsigned i = 0; i < storm.rounds; i++)
		smp_call_function_many(
			&others, storm_hit, (void *)(uintptr_t)self,
			i == storm.rounds - 1 ? SMP_CALL_WAIT
					      : SMP_CALL_NO_WAIT);
	__atomic_fetch_add(&storm.finished, 1, __ATOMIC_SEQ_CST);
}

KTEST(SMP0004, smp, "IPI storm: every call sent is received exactly once")
{
	if (!need_cpus(t, 2))
		return;
	__builtin_memset(&storm, 0, sizeof(storm));
	storm.rounds = STORM_CALLS_PER_SENDER / (cpu_count - 1);
	/*
	 * The others run storm_sender from their IPI handler (NO_WAIT), this
	 * CPU runs it directly: all send at once, and each keeps serving its
	 * own queue while it sends.
	 */
	smp_call_function_all(storm_sender, NULL, SMP_CALL_NO_WAIT);
	while (__atomic_load_n(&storm.finished, __ATOMIC_SEQ_CST) < cpu_count)
		cpu_relax();
	for (unsigned s = 0; s < cpu_count; s++) {
		for (unsigned r = 0; r < cpu_count; r++) {
			uint32_t want = s == r ? 0 : storm.rounds;

			KEXPECT(storm.received[s][r] == want,
				"CPU %u got %u calls from CPU %u, sent %u", r,
				storm.received[s][r], s, want);
		}
	}
}

/*
 * Lock acquisitions in all, spread over the CPUs. Kept modest: under an
 * emulator with more vCPUs than host cores, a ticket lock hands over only
 * when the next waiter's vCPU is running, which can take milliseconds.
 */
#define LOCK_ACQUISITIONS 4000
#define LOCK_ROUNDS_MIN	  250

static struct spinlock stress_lock = SPINLOCK_INIT;
static uint64_t stress_counter; /* guarded by stress_lock, non-atomic */
static uint32_t stress_done;
static unsigned stress_rounds; /* per CPU */

static void lock_stress(void *arg)
{
	(void)arg;
	for (unsigned i = 0; i < stress_rounds; i++) {
		uint64_t flags = spin_lock_irqsave(&stress_lock);
		/* A plain read-modify-write: only the lock makes it safe. */
		uint64_t v = *(volatile uint64_t *)&stress_counter;

		*(volatile uint64_t *)&stress_counter = v + 1;
		spin_unlock_irqrestore(&stress_lock, flags);
	}
	__atomic_fetch_add(&stress_done, 1, __ATOMIC_SEQ_CST);
}

KTEST(SMP0005, smp, "spinlock stress: no increment is lost")
{
	stress_counter = 0;
	stress_done = 0;
	stress_rounds = MAX(LOCK_ACQUISITIONS / cpu_count, LOCK_ROUNDS_MIN);
	smp_call_function_all(lock_stress, NULL, SMP_CALL_NO_WAIT);
	while (__atomic_load_n(&stress_done, __ATOMIC_SEQ_CST) < cpu_count)
		cpu_relax();
	KEXPECT(stress_counter == (uint64_t)stress_rounds * cpu_count,
		"counter %llu, want %llu", (unsigned long long)stress_counter,
		(unsigned long long)stress_rounds * cpu_count);
	KEXPECT(!spin_is_locked(&stress_lock), "lock left held");
}

#define TEST_VECTOR 0xe0 /* unused by the kernel */

static uint32_t raw_ipis[MAX_CPUS];

static void count_raw_ipi(struct trap_frame *frame)
{
	(void)frame;
	__atomic_fetch_add(&raw_ipis[this_cpu_index()], 1, __ATOMIC_RELAXED);
}

static bool wait_raw_ipis(const uint32_t *want)
{
	uint64_t deadline = tsc_read_ordered() + ns_to_tsc(2000000000ULL);

	while (tsc_read_ordered() < deadline) {
		bool all = true;

		for (unsigned cpu = 0; cpu < cpu_count; cpu++)
			all &= __atomic_load_n(&raw_ipis[cpu],
					       __ATOMIC_RELAXED) == want[cpu];
		if (all)
			return true;
		cpu_relax();
	}
	return false;
}

KTEST(SMP0006, smp, "bare IPIs: to a mask, to all but self, to self")
{
	static uint32_t want[MAX_CPUS];
	interrupt_handler old = trap_set_handler(TEST_VECTOR, count_raw_ipi);
	uint64_t flags = read_rflags();
	struct cpumask self_only;

	__builtin_memset(raw_ipis, 0, sizeof(raw_ipis));
	__builtin_memset(want, 0, sizeof(want));
	sti(); /* this CPU must take its own IPIs */
	smp_send_ipi_mask(&cpu_online_mask, TEST_VECTOR);
	for (unsigned cpu = 0; cpu < cpu_count; cpu++)
		want[cpu] = 1;
	KEXPECT(wait_raw_ipis(want), "a CPU missed the IPI to the mask");

	lapic_send_all_but_self(TEST_VECTOR);
	for (unsigned cpu = 0; cpu < cpu_count; cpu++)
		want[cpu] += cpu != this_cpu_index();
	KEXPECT(wait_raw_ipis(want), "all-but-self reached the wrong CPUs");

	cpumask_clear_all(&self_only);
	cpumask_set(&self_only, this_cpu_index());
	smp_send_ipi_mask(&self_only, TEST_VECTOR);
	want[this_cpu_index()]++;
	KEXPECT(wait_raw_ipis(want), "self-IPI not taken");
	for (unsigned cpu = 0; cpu < cpu_count; cpu++)
		KEXPECT(raw_ipis[cpu] == want[cpu], "CPU %u: %u IPIs, want %u",
			cpu, raw_ipis[cpu], want[cpu]);
	if (!(flags & RFLAGS_IF))
		cli(); /* back to how the runner left it */
	trap_set_handler(TEST_VECTOR, old);
}

/*
 * Calls from inside a call, crossing: CPUs 1 and 2 each run a function that
 * sends to the other and waits, while the other's request to it may wait,
 * taken but not yet run, behind that very function. Such a request can only
 * run inside the function's own wait (smp/call_queue.c, opening comment);
 * before that was so, this test deadlocked with both CPUs still looking at
 * their queues, so the watchdog stayed quiet.
 *  1. CPU 0 parks CPUs 1 and 2 in cross_park (interrupts off, not serving);
 *  2. CPU 3 queues cross_send on both;
 *  3. CPU 0 lets them go: each sends a call to the other, and that send
 *     first serves its own queue, so it runs cross_send, which sends to the
 *     other and waits, inside a call, with interrupts off, as the other does.
 * cross_park returns once its own call is queued. Waiting there without
 * serving would be a deadlock of the test's making: a CPU that got there
 * first (its cross_send done) would never run the other's request, sent
 * a moment later, and the watchdog would fire (it did, on a loaded host).
 */
#define CROSS_A		 1
#define CROSS_B		 2
#define CROSS_QUEUER	 3
#define CROSS_TIMEOUT_NS 20000000000ULL /* a loaded 16-vCPU TCG run */

struct cross {
	uint32_t parked; /* cross_park arrivals, two per parked CPU */
	uint32_t stage;	 /* 1: send to the other, and return */
	uint32_t sent;	 /* cross_send calls done */
	uint32_t ran[MAX_CPUS];
};

static struct cross cross;

static unsigned cross_other(unsigned cpu)
{
	return cpu == CROSS_A ? CROSS_B : CROSS_A;
}

static void cross_hit(void *arg)
{
	(void)arg;
	__atomic_fetch_add(&cross.ran[this_cpu_index()], 1, __ATOMIC_RELAXED);
}

static void cross_wait_stage(uint32_t stage)
{
	while (__atomic_load_n(&cross.stage, __ATOMIC_ACQUIRE) < stage)
		cpu_relax();
}

static void cross_park(void *arg)
{
	(void)arg;
	__atomic_fetch_add(&cross.parked, 1, __ATOMIC_SEQ_CST);
	cross_wait_stage(1);
	smp_call_function_single(cross_other(this_cpu_index()), cross_hit, NULL,
				 SMP_CALL_NO_WAIT);
	__atomic_fetch_add(&cross.parked, 1, __ATOMIC_SEQ_CST);
}

static void cross_send(void *arg)
{
	(void)arg;
	smp_call_function_single(cross_other(this_cpu_index()), cross_hit, NULL,
				 SMP_CALL_WAIT);
	__atomic_fetch_add(&cross.sent, 1, __ATOMIC_SEQ_CST);
}

/* On CROSS_QUEUER: CPU 0's slots to the parked CPUs are busy parking them. */
static void cross_queue(void *arg)
{
	struct cpumask pair;

	(void)arg;
	cpumask_clear_all(&pair);
	cpumask_set(&pair, CROSS_A);
	cpumask_set(&pair, CROSS_B);
	smp_call_function_many(&pair, cross_send, NULL, SMP_CALL_NO_WAIT);
}

static bool cross_wait(const uint32_t *counter, uint32_t want)
{
	uint64_t deadline = tsc_read_ordered() + ns_to_tsc(CROSS_TIMEOUT_NS);

	while (__atomic_load_n(counter, __ATOMIC_SEQ_CST) < want) {
		if (tsc_read_ordered() > deadline)
			return false;
		cpu_relax();
	}
	return true;
}

KTEST(SMP0007, smp, "calls sent from calls, crossing, do not deadlock")
{
	struct cpumask pair;

	if (!need_cpus(t, 4))
		return;
	__builtin_memset(&cross, 0, sizeof(cross));
	cpumask_clear_all(&pair);
	cpumask_set(&pair, CROSS_A);
	cpumask_set(&pair, CROSS_B);
	smp_call_function_many(&pair, cross_park, NULL, SMP_CALL_NO_WAIT);
	KEXPECT(cross_wait(&cross.parked, 2), "%u of 2 CPUs parked",
		cross.parked);
	smp_call_function_single(CROSS_QUEUER, cross_queue, NULL,
				 SMP_CALL_WAIT);
	__atomic_store_n(&cross.stage, 1, __ATOMIC_RELEASE);
	KEXPECT(cross_wait(&cross.parked, 4), "%u of 2 calls queued",
		cross.parked - 2);
	KEXPECT(cross_wait(&cross.sent, 2),
		"%u of 2 crossing calls returned: CPUs %u and %u deadlocked",
		cross.sent, CROSS_A, CROSS_B);
	/* Each got the parked call and the crossing one from the other. */
	KEXPECT(cross_wait(&cross.ran[CROSS_A], 2) &&
			cross_wait(&cross.ran[CROSS_B], 2),
		"CPU %u ran %u calls, CPU %u %u; want 2 each", CROSS_A,
		cross.ran[CROSS_A], CROSS_B, cross.ran[CROSS_B]);
}
