#!/usr/bin/env python3
"""Builds the fake /proc + /sys trees used by hostinfo, envsnap, telemetry
and check tests. Run from this directory:

  python3 make_fixtures.py --vm      # copy THIS machine's files into vm/ (once)
  python3 make_fixtures.py           # (re)write the hand-made trees

vm/         real files of the dev VM (Firecracker, 2 vCPUs, haltpoll cpuidle)
isolated/   8 CPUs (4 cores x 2 threads), isolcpus/nohz_full/rcu_nocbs 2,6,
            intel_idle POLL/C1/C1E/C6 (C6 disabled), performance, no_turbo
irqbalance/ 4 CPUs, no isolation, irqbalance running, IRQs on CPU 1,
            acpi_idle with deep states, powersave, boost on, hpet, THP always
k8spod/     Kubernetes pod (cgroup v2 namespace): cpuset 2-3 on an SMT host
            (siblings 6,7 not owned), cpu.max quota, nr_throttled > 0; its own
            PID namespace (PID 1 is the probe, no kthreadd: no hostPID)
c7i/        AWS c7i.2xlarge (x86, Sapphire Rapids, 4 cores x 2 threads), AL2023
            kernel 6.1 layout: PCI-MSI rows, out-of-tree ENA 2.15.0g on ens5
            (8 queues + ena-mgmnt, RX-only packet stamps offered, PHC off) and
            a second ENI ens6; ens5 carries the default route
c8g/        AWS c8g.2xlarge (arm64, Graviton4, 8 cores, no SMT), AL2023 kernel
            6.12+ layout: GICv3 and ITS-PCI-MSIX rows with the Edge/Level
            column, IPI0..IPI7 and Err; no cpuidle driver; in-tree ENA on
            ens5, the only interface (it carries the default route)
c7i, c8g    also: DMI "Amazon EC2" with the instance type, IGMP defaults
            (force_igmp_version 0: IGMPv3) on every interface

The c7i and c8g /proc/interrupts are printed with the kernel's own formats
(kernel/irq/proc.c show_interrupts, arch/x86/kernel/irq.c and
arch/arm64/kernel/smp.c arch_show_interrupts), so column widths are the
kernel's. Verified from kernel and amzn-drivers sources: the row layout, the
arch rows, ENA IRQ names (ena-mgmnt@pci:BDF, IF-Tx-Rx-N), ENA sysfs files
and ethtool counter names. Assumed (not seen on an instance): the legacy
IRQ set, counts, NVMe queue count, which x86 arch rows the AL2023 config
prints (MCE/THR/DFR/HYP), and the c7i idle states (intel_idle's Sapphire
Rapids table; AWS lists c7i among the types whose C-states the OS
controls).
"""
import os, shutil, sys, glob

HERE = os.path.dirname(os.path.abspath(__file__))

def w(root, path, text):
    p = os.path.join(root, path.lstrip('/'))
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, 'w') as f:
        f.write(text)

def copy_vm():
    root = os.path.join(HERE, 'vm')
    shutil.rmtree(root, ignore_errors=True)
    files = ['/proc/interrupts', '/proc/softirqs', '/proc/stat', '/proc/cmdline', '/proc/cpuinfo',
             '/proc/net/softnet_stat', '/proc/sys/kernel/osrelease', '/proc/version',
             '/proc/self/cgroup', '/proc/self/status', '/proc/2/comm',
             '/sys/fs/cgroup/cpuset/cpuset.effective_cpus', '/sys/fs/cgroup/cpu/cpu.cfs_quota_us',
             '/sys/fs/cgroup/cpu/cpu.cfs_period_us', '/sys/fs/cgroup/cpu/cpu.stat',
             '/sys/fs/cgroup/unified/cgroup.controllers',
             '/sys/kernel/mm/transparent_hugepage/enabled', '/sys/kernel/mm/transparent_hugepage/defrag',
             '/sys/devices/system/clocksource/clocksource0/current_clocksource',
             '/sys/devices/system/clocksource/clocksource0/available_clocksource']
    cpu = '/sys/devices/system/cpu'
    files += [cpu + '/' + f for f in ('online', 'possible', 'present', 'offline', 'isolated', 'kernel_max',
                                      'smt/active', 'smt/control')]
    files += glob.glob(cpu + '/cpuidle/*')
    files += glob.glob(cpu + '/cpu[0-9]*/topology/*')
    files += glob.glob(cpu + '/cpu[0-9]*/cpuidle/state*/*')
    files += glob.glob('/proc/irq/*/smp_affinity_list') + glob.glob('/proc/irq/*/effective_affinity_list')
    for f in files:
        try:
            with open(f) as src:
                data = src.read()
        except OSError:
            continue
        w(root, f, data)
    for n in glob.glob(cpu + '/cpu[0-9]*/node*'):
        os.makedirs(os.path.join(root, n.lstrip('/')), exist_ok=True)
    w(root, '/proc/sys/kernel/hostname', 'vm\n')

def header(ncpu, width=11):
    return ' ' * 12 + ''.join(('CPU%d' % c).ljust(width) for c in range(ncpu)) + '\n'

def irqline(irq, counts, desc):
    return '%4s:' % irq + ''.join('%11d' % c for c in counts) + '  ' + desc + '\n'

SOFTIRQS = ['HI', 'TIMER', 'NET_TX', 'NET_RX', 'BLOCK', 'IRQ_POLL', 'TASKLET', 'SCHED', 'HRTIMER', 'RCU']

def softirqs(ncpu, scale):
    s = header(ncpu)
    for i, n in enumerate(SOFTIRQS):
        s += '%12s:' % n + ''.join('%11d' % (scale[c] * (i + 1)) for c in range(ncpu)) + '\n'
    return s

def cpu_tree(root, ncpu, siblings, core_of, driver, states, governor=None, cpufreq_driver=None):
    cpu = '/sys/devices/system/cpu'
    w(root, cpu + '/online', '0-%d\n' % (ncpu - 1))
    w(root, cpu + '/possible', '0-%d\n' % (ncpu - 1))
    w(root, cpu + '/present', '0-%d\n' % (ncpu - 1))
    w(root, cpu + '/offline', '\n')
    w(root, cpu + '/cpuidle/current_driver', driver + '\n')
    w(root, cpu + '/cpuidle/current_governor', 'menu\n')
    for c in range(ncpu):
        d = '%s/cpu%d' % (cpu, c)
        w(root, d + '/topology/physical_package_id', '0\n')
        w(root, d + '/topology/core_id', '%d\n' % core_of(c))
        w(root, d + '/topology/thread_siblings_list', siblings(c) + '\n')
        os.makedirs(os.path.join(root, (d + '/node0').lstrip('/')), exist_ok=True)
        # git keeps no empty directory: a placeholder keeps node0 in the tree
        open(os.path.join(root, (d + '/node0/.keep').lstrip('/')), 'w').close()
        for k, (name, lat, res, dis, usage, time) in enumerate(states(c)):
            sd = '%s/cpuidle/state%d' % (d, k)
            for f, v in (('name', name), ('desc', name + ' idle state'), ('latency', lat), ('residency', res),
                         ('disable', dis), ('usage', usage), ('time', time), ('above', 0), ('below', 0)):
                w(root, sd + '/' + f, '%s\n' % v)
        if governor:
            fd = d + '/cpufreq'
            w(root, fd + '/scaling_governor', governor + '\n')
            w(root, fd + '/scaling_driver', cpufreq_driver + '\n')
            w(root, fd + '/scaling_cur_freq', '3000000\n')
            w(root, fd + '/scaling_min_freq', '800000\n')
            w(root, fd + '/scaling_max_freq', '3500000\n')

def task(root, pid, tid, comm, cpu, state='S'):
    # 52 fields as in Linux 6.x; field 39 is processor.
    fields = [str(tid), '(%s)' % comm, state] + ['0'] * 49
    fields[38] = str(cpu)
    w(root, '/proc/%d/task/%d/stat' % (pid, tid), ' '.join(fields) + '\n')
    if pid == tid:
        w(root, '/proc/%d/stat' % pid, ' '.join(fields) + '\n')
        w(root, '/proc/%d/comm' % pid, comm + '\n')
        w(root, '/proc/%d/cmdline' % pid, comm + '\0')
    w(root, '/proc/%d/task/%d/status' % (pid, tid),
      'Name:\t%s\nState:\tS (sleeping)\nTgid:\t%d\nPid:\t%d\nCpus_allowed_list:\t%d\n'
      'voluntary_ctxt_switches:\t%d\nnonvoluntary_ctxt_switches:\t%d\n' % (comm, pid, tid, cpu, 100 + tid, tid % 7))

def common(root, cmdline, clocksource, avail, thp):
    w(root, '/proc/cmdline', cmdline + '\n')
    w(root, '/proc/sys/kernel/osrelease', '6.8.0-rig-fixture\n')
    w(root, '/proc/sys/kernel/hostname', os.path.basename(root) + '\n')
    w(root, '/proc/version', 'Linux version 6.8.0-rig-fixture (fixture) #1 SMP PREEMPT_DYNAMIC\n')
    w(root, '/sys/devices/system/clocksource/clocksource0/current_clocksource', clocksource + '\n')
    w(root, '/sys/devices/system/clocksource/clocksource0/available_clocksource', avail + ' \n')
    sel = {'always': '[always] madvise never', 'madvise': 'always [madvise] never', 'never': 'always madvise [never]'}
    w(root, '/sys/kernel/mm/transparent_hugepage/enabled', sel[thp] + '\n')
    w(root, '/sys/kernel/mm/transparent_hugepage/defrag', 'always defer defer+madvise [madvise] never\n')

def irqs(root, table):
    for irq, aff, eff in table:
        w(root, '/proc/irq/%d/smp_affinity_list' % irq, aff + '\n')
        w(root, '/proc/irq/%d/effective_affinity_list' % irq, eff + '\n')

def stat(ncpu, busy):
    s = 'cpu  0 0 0 0 0 0 0 0 0 0\n'
    for c in range(ncpu):
        s += 'cpu%d %d 0 %d %d 0 0 %d 0 0 0\n' % (c, busy[c], busy[c] // 2, 100000 - busy[c], busy[c] // 10)
    return s + 'intr 0\nctxt 1000\nbtime 1700000000\nprocesses 10\nprocs_running 1\nprocs_blocked 0\n'

def isolated():
    root = os.path.join(HERE, 'isolated')
    shutil.rmtree(root, ignore_errors=True)
    n = 8
    common(root, 'BOOT_IMAGE=/vmlinuz root=/dev/nvme0n1p2 ro quiet isolcpus=domain,managed_irq,2,6 '
           'nohz_full=2,6 rcu_nocbs=2,6 irqaffinity=0,4 intel_idle.max_cstate=3 "acpi_osi=Linux" -- init-arg',
           'tsc', 'tsc hpet acpi_pm', 'madvise')
    states = lambda c: [('POLL', 0, 0, 0, 5 + c, 100), ('C1', 1, 1, 0, 1000 * (c + 1), 50000),
                        ('C1E', 10, 20, 0, 300 + c, 90000), ('C6', 133, 600, 1 if c in (2, 6) else 0, 7 * c, 400000)]
    cpu_tree(root, n, lambda c: '%d,%d' % (c % 4, c % 4 + 4), lambda c: c % 4, 'intel_idle', states,
             'performance', 'intel_pstate')
    cpu = '/sys/devices/system/cpu'
    w(root, cpu + '/isolated', '2,6\n')
    w(root, cpu + '/nohz_full', '2,6\n')
    w(root, cpu + '/intel_pstate/no_turbo', '1\n')
    w(root, cpu + '/intel_pstate/status', 'active\n')
    w(root, cpu + '/intel_pstate/min_perf_pct', '100\n')
    w(root, cpu + '/intel_pstate/max_perf_pct', '100\n')
    w(root, '/proc/cpuinfo', 'processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Gold 6346 CPU @ 3.10GHz\n\n')
    hdr = header(n)
    body = irqline(0, [45] + [0] * 7, 'IO-APIC   2-edge      timer')
    body += irqline(8, [1] + [0] * 7, 'IO-APIC   8-edge      rtc0')
    body += irqline(9, [0] * 8, 'IO-APIC   9-fasteoi   acpi')
    body += irqline(120, [2000, 0, 0, 0, 0, 0, 0, 0], 'IR-PCI-MSIX-0000:3b:00.0    0-edge      mlx5_async0@pci:0000:3b:00.0')
    body += irqline(121, [0, 0, 5123, 0, 0, 0, 0, 0], 'IR-PCI-MSIX-0000:3b:00.0    1-edge      mlx5_comp0@pci:0000:3b:00.0')
    body += irqline(122, [0, 31000, 0, 0, 0, 0, 0, 0], 'IR-PCI-MSIX-0000:3b:00.0    2-edge      mlx5_comp1@pci:0000:3b:00.0')
    body += irqline(130, [700, 0, 0, 0, 0, 0, 0, 0], 'IR-PCI-MSIX-0000:01:00.0    0-edge      nvme0q0')
    body += irqline(131, [0, 0, 0, 0, 812, 0, 0, 0], 'IR-PCI-MSIX-0000:01:00.0    1-edge      nvme0q1')
    body += irqline(140, [0] * 8, 'IR-IO-APIC   16-fasteoi   i801_smbus, ehci_hcd:usb1')
    arch = [('NMI', 'Non-maskable interrupts'), ('LOC', 'Local timer interrupts'), ('SPU', 'Spurious interrupts'),
            ('RES', 'Rescheduling interrupts'), ('CAL', 'Function call interrupts'), ('TLB', 'TLB shootdowns')]
    for i, (a, d) in enumerate(arch):
        body += '%4s:' % a + ''.join('%11d' % ((i + 1) * (10 if c in (2, 6) else 1000) + c) for c in range(n)) + '   ' + d + '\n'
    body += ' ERR:          0\n MIS:          0\n'
    w(root, '/proc/interrupts', hdr + body)
    w(root, '/proc/softirqs', softirqs(n, [500, 500, 3, 500, 500, 500, 3, 500]))
    w(root, '/proc/stat', stat(n, [5000, 5000, 90000, 100, 100, 100, 200, 100]))
    w(root, '/proc/net/softnet_stat', ''.join(
        '%08x %08x %08x 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 %08x 00000000 00000000\n'
        % (1000 * (c + 1), 2 if c == 2 else 0, c, c) for c in range(n)))
    # mlx5_comp0 (121) is pinned on the isolated CPU 2 on purpose (the probe
    # queue's IRQ); nvme0q1 is managed and lands on 4.
    irqs(root, [(0, '0', '0'), (8, '0', '0'), (9, '0', '0'), (120, '0,4', '0'), (121, '2', '2'), (122, '1', '1'),
                (130, '0', '0'), (131, '4-5', '4'), (140, '0', '0')])
    w(root, '/proc/irq/default_smp_affinity', '11\n')
    task(root, 1, 1, 'systemd', 0)
    task(root, 2, 2, 'kthreadd', 0)  # the host's PID namespace: kernel threads are seen
    task(root, 900, 900, 'sshd', 4)
    task(root, 4242, 4242, 'rig', 0)
    task(root, 4242, 4250, 'rig-responder', 2, 'R')
    task(root, 30, 30, 'ksoftirqd/2', 2)
    task(root, 31, 31, 'kworker/2:1', 2, 'I')
    task(root, 66, 66, 'ksoftirqd/6', 6)
    w(root, '/proc/self/cgroup', '0::/user.slice/user-0.slice/session-1.scope\n')
    d = '/sys/fs/cgroup/user.slice/user-0.slice/session-1.scope'
    w(root, '/sys/fs/cgroup/cgroup.controllers', 'cpuset cpu io memory pids\n')
    w(root, d + '/cpuset.cpus.effective', '0-7\n')
    w(root, d + '/cpu.max', 'max 100000\n')
    w(root, d + '/cpu.stat', 'usage_usec 1000\nuser_usec 600\nsystem_usec 400\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\n')
    w(root, '/proc/self/status', 'Name:\trig\nCpus_allowed_list:\t0-7\n')

def irqbalance():
    root = os.path.join(HERE, 'irqbalance')
    shutil.rmtree(root, ignore_errors=True)
    n = 4
    common(root, 'BOOT_IMAGE=/vmlinuz-6.8.0 root=UUID=1234 ro quiet splash', 'hpet', 'tsc hpet acpi_pm', 'always')
    states = lambda c: [('POLL', 0, 0, 0, 1, 1), ('C1_ACPI', 1, 2, 0, 100, 5000), ('C2_ACPI', 18, 36, 0, 4000, 800000),
                        ('C3_ACPI', 350, 700, 0, 9000, 9000000)]
    cpu_tree(root, n, lambda c: str(c), lambda c: c, 'acpi_idle', states, 'powersave', 'acpi-cpufreq')
    cpu = '/sys/devices/system/cpu'
    w(root, cpu + '/isolated', '\n')
    w(root, cpu + '/nohz_full', ' (null)\n')
    w(root, cpu + '/cpufreq/boost', '1\n')
    w(root, '/proc/cpuinfo', 'processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD Ryzen 7 5800X 8-Core Processor\n\n')
    body = irqline(0, [40, 0, 0, 0], 'IO-APIC   2-edge      timer')
    body += irqline(1, [0, 9, 0, 0], 'IO-APIC   1-edge      i8042')
    body += irqline(27, [0, 88123, 0, 0], 'PCI-MSI 1048576-edge      enp3s0')
    body += irqline(28, [0, 12005, 0, 0], 'PCI-MSI 524288-edge      nvme0q0')
    body += irqline(29, [0, 0, 400, 0], 'PCI-MSI 32768-edge      xhci_hcd')
    for i, (a, d) in enumerate([('NMI', 'Non-maskable interrupts'), ('LOC', 'Local timer interrupts'),
                                ('RES', 'Rescheduling interrupts'), ('CAL', 'Function call interrupts')]):
        body += '%4s:' % a + ''.join('%11d' % ((i + 1) * 1000 + c) for c in range(n)) + '   ' + d + '\n'
    body += ' ERR:          0\n MIS:          0\n'
    w(root, '/proc/interrupts', header(n) + body)
    w(root, '/proc/softirqs', softirqs(n, [100, 900, 100, 100]))
    w(root, '/proc/stat', stat(n, [3000, 40000, 2000, 2000]))
    w(root, '/proc/net/softnet_stat', ''.join(
        '%08x 00000000 %08x 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 %08x\n'
        % (500 * (c + 1), c, c) for c in range(n)))
    irqs(root, [(0, '0', '0'), (1, '0-3', '1'), (27, '1', '1'), (28, '0-3', '1'), (29, '2', '2')])
    task(root, 1, 1, 'systemd', 0)
    task(root, 2, 2, 'kthreadd', 0)  # the host's PID namespace: kernel threads are seen
    task(root, 812, 812, 'irqbalance', 3)
    w(root, '/proc/812/environ', 'PATH=/usr/bin\0IRQBALANCE_ARGS=\0')
    task(root, 950, 950, 'ptp4l', 0)
    w(root, '/proc/950/cmdline', 'ptp4l\0-i\0enp3s0\0-m\0')
    task(root, 2000, 2000, 'firefox', 1, 'R')
    w(root, '/proc/self/cgroup', '0::/user.slice\n')
    w(root, '/sys/fs/cgroup/cgroup.controllers', 'cpuset cpu io memory pids\n')
    w(root, '/sys/fs/cgroup/user.slice/cpuset.cpus.effective', '0-3\n')
    w(root, '/sys/fs/cgroup/user.slice/cpu.max', 'max 100000\n')
    w(root, '/sys/fs/cgroup/user.slice/cpu.stat', 'nr_periods 0\nnr_throttled 0\nthrottled_usec 0\n')
    w(root, '/proc/self/status', 'Name:\trig\nCpus_allowed_list:\t0-3\n')

def k8spod():
    root = os.path.join(HERE, 'k8spod')
    shutil.rmtree(root, ignore_errors=True)
    n = 8
    common(root, 'BOOT_IMAGE=/boot/vmlinuz root=/dev/nvme0n1p1 ro console=ttyS0', 'tsc', 'tsc kvm-clock', 'madvise')
    states = lambda c: [('POLL', 0, 0, 0, 0, 0), ('C1', 1, 1, 0, 500, 4000), ('C6', 100, 500, 0, 50, 200000)]
    cpu_tree(root, n, lambda c: '%d,%d' % (c % 4, c % 4 + 4), lambda c: c % 4, 'intel_idle', states)
    w(root, '/sys/devices/system/cpu/isolated', '\n')
    w(root, '/proc/cpuinfo', 'processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Platinum 8488C\n\n')
    body = irqline(24, [0] * 8, 'PCI-MSIX-0000:00:05.0   0-edge      ena-mgmnt@pci:0000:00:05.0')
    body += irqline(25, [10, 0, 9000, 0, 0, 0, 0, 0], 'PCI-MSIX-0000:00:05.0   1-edge      ens5-Tx-Rx-0')
    body += ' LOC:' + ''.join('%11d' % (1000 + c) for c in range(n)) + '   Local timer interrupts\n'
    w(root, '/proc/interrupts', header(n) + body)
    w(root, '/proc/softirqs', softirqs(n, [10] * n))
    w(root, '/proc/stat', stat(n, [1000] * n))
    irqs(root, [(24, '0-7', '0'), (25, '2', '2')])
    task(root, 1, 1, 'responder', 2)
    w(root, '/proc/self/cgroup', '0::/\n')
    w(root, '/sys/fs/cgroup/cgroup.controllers', 'cpuset cpu io memory pids\n')
    w(root, '/sys/fs/cgroup/cpuset.cpus.effective', '2-3\n')
    w(root, '/sys/fs/cgroup/cpuset.mems.effective', '0\n')
    w(root, '/sys/fs/cgroup/cpu.max', '200000 100000\n')
    w(root, '/sys/fs/cgroup/cpu.stat', 'usage_usec 123456\nuser_usec 100000\nsystem_usec 23456\n'
      'nr_periods 5000\nnr_throttled 17\nthrottled_usec 84000\nnr_bursts 0\nburst_usec 0\n')
    w(root, '/proc/self/status', 'Name:\trig\nCpus_allowed_list:\t2-3\n')

def show_interrupts(ncpu, rows, arch, nr_irqs, level):
    """/proc/interrupts as kernel/irq/proc.c prints it. rows: (irq, counts,
    chip, hwirq or None, handler name or None, actions); level: the
    Edge/Level column of GENERIC_IRQ_SHOW_LEVEL ('Edge'/'Level' per row
    from the handler argument) or None on x86. arch(prec) prints the
    arch rows."""
    prec, j = 3, 1000
    while prec < 10 and j <= nr_irqs:
        prec, j = prec + 1, j * 10
    s = '%*s' % (prec + 8, '') + ''.join('CPU%-8d' % c for c in range(ncpu)) + '\n'
    for irq, counts, chip, hwirq, handler, actions in rows:
        s += '%*d: ' % (prec, irq) + ''.join('%10u ' % c for c in counts)
        s += ' %8s' % chip
        s += ' %*d' % (prec, hwirq) if hwirq is not None else ' %*s' % (prec, '')
        if level:
            s += ' %-8s' % handler  # 'Edge' or 'Level'
        elif handler:
            s += '-%-8s' % handler
        s += '  ' + ', '.join(actions) + '\n'
    return s + arch(prec)

def x86_arch_rows(ncpu, scale):
    # arch/x86/kernel/irq.c arch_show_interrupts, AL2023 config (MCE,
    # MCE_AMD, KVM): per-CPU rows, then ERR and MIS with one count.
    names = [('NMI', 'Non-maskable interrupts'), ('LOC', 'Local timer interrupts'), ('SPU', 'Spurious interrupts'),
             ('PMI', 'Performance monitoring interrupts'), ('IWI', 'IRQ work interrupts'),
             ('RTR', 'APIC ICR read retries'), ('RES', 'Rescheduling interrupts'), ('CAL', 'Function call interrupts'),
             ('TLB', 'TLB shootdowns'), ('TRM', 'Thermal event interrupts'), ('THR', 'Threshold APIC interrupts'),
             ('DFR', 'Deferred Error APIC interrupts'), ('MCE', 'Machine check exceptions'),
             ('MCP', 'Machine check polls'), ('HYP', 'Hypervisor callback interrupts')]
    tail = [('PIN', 'Posted-interrupt notification event'), ('NPI', 'Nested posted-interrupt event'),
            ('PIW', 'Posted-interrupt wakeup event')]
    def rows(prec, lst):
        out = ''
        for k, (a, d) in enumerate(lst):
            v = {'LOC': 90000, 'RES': 3000, 'CAL': 2500, 'TLB': 400, 'MCP': 20}.get(a, 0)
            out += '%*s: ' % (prec, a) + ''.join('%10u ' % (v * scale[c] // 10) for c in range(ncpu)) + '  ' + d + '\n'
        return out
    return lambda prec: rows(prec, names) + '%*s: %10u\n' % (prec, 'ERR', 0) + '%*s: %10u\n' % (prec, 'MIS', 0) + rows(prec, tail)

def arm64_arch_rows(ncpu, scale, ipis):
    # arch/arm64/kernel/smp.c arch_show_interrupts: "IPI%u:" rows, then Err.
    def rows(prec):
        out = ''
        for i, d in enumerate(ipis):
            v = {0: 4000, 1: 2200, 5: 300}.get(i, 0)
            out += '%*s%u:%s' % (prec - 1, 'IPI', i, ' ' if prec >= 4 else '')
            out += ''.join('%10u ' % (v * scale[c] // 10) for c in range(ncpu)) + '      %s\n' % d
        return out + '%*s: %10u\n' % (prec, 'Err', 0)
    return rows

def link(root, path, target):
    p = os.path.join(root, path.lstrip('/'))
    os.makedirs(os.path.dirname(p), exist_ok=True)
    os.symlink(target, p)

def ena_nic(root, iface, bdf, irqs, module):
    """An ENA netdev laid out as sysfs lays it out: the class link, the PCI
    device with its driver link and msi_irqs, the driver's sysfs files."""
    dev = '/sys/devices/pci0000:00/' + bdf
    for n in irqs:
        w(root, dev + '/msi_irqs/%d' % n, 'msix\n')
    link(root, dev + '/driver', '../../../bus/pci/drivers/ena')
    w(root, '/sys/bus/pci/drivers/ena/.keep', '')
    link(root, '/sys/bus/pci/devices/' + bdf, '../../../devices/pci0000:00/' + bdf)
    link(root, '/sys/class/net/' + iface, '../../devices/pci0000:00/%s/net/%s' % (bdf, iface))
    link(root, dev + '/net/%s/device' % iface, '../../../' + bdf)
    w(root, dev + '/net/%s/operstate' % iface, 'up\n')
    w(root, dev + '/net/%s/mtu' % iface, '9001\n')
    w(root, dev + '/net/%s/speed' % iface, '-1\n')
    if module == 'out-of-tree':
        # amzn-drivers 2.15.0: ena_sysfs.c (phc_error_bound only while the PHC runs)
        w(root, dev + '/rx_copybreak', '256\n')
        w(root, dev + '/large_llq_header', '1\n')
        w(root, dev + '/hw_packet_timestamping_state',
          'HW TX support: 0\nHW RX support: 1\nTX configuration: 0\nRX configuration: 0\n')

def aws(root, ncpu, siblings, core_of, kernel, arch, cpuinfo, idle_driver, states):
    common(root, 'BOOT_IMAGE=(hd0,gpt1)/boot/vmlinuz-%s root=UUID=0c1a2b3c ro console=tty0 console=ttyS0,115200n8 '
           'nvme_core.io_timeout=4294967295 rd.emergency=poweroff rd.shell=0 selinux=1 security=selinux quiet' % kernel,
           *(('tsc', 'tsc kvm-clock hpet acpi_pm') if arch == 'x86_64' else ('arch_sys_counter', 'arch_sys_counter')),
           'madvise')
    w(root, '/proc/sys/kernel/osrelease', kernel + '\n')
    w(root, '/proc/version', 'Linux version %s (mockbuild@ip-10-0-40-1) (gcc (GCC) 11.5.0) #1 SMP\n' % kernel)
    w(root, '/proc/sys/kernel/arch', arch + '\n')
    w(root, '/proc/cpuinfo', cpuinfo)
    cpu_tree(root, ncpu, siblings, core_of, idle_driver, states)
    cpu = '/sys/devices/system/cpu'
    w(root, cpu + '/isolated', '\n')
    w(root, cpu + '/nohz_full', ' (null)\n')
    w(root, '/proc/stat', stat(ncpu, [2000] * ncpu))
    w(root, '/proc/softirqs', softirqs(ncpu, [100] * ncpu))
    w(root, '/proc/net/softnet_stat', ''.join(
        '%08x 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 %08x\n'
        % (100 * (c + 1), c) for c in range(ncpu)))
    w(root, '/proc/self/cgroup', '0::/user.slice/user-1000.slice/session-1.scope\n')
    d = '/sys/fs/cgroup/user.slice/user-1000.slice/session-1.scope'
    w(root, '/sys/fs/cgroup/cgroup.controllers', 'cpuset cpu io memory hugetlb pids rdma misc\n')
    w(root, d + '/cpuset.cpus.effective', '0-%d\n' % (ncpu - 1))
    w(root, d + '/cpu.max', 'max 100000\n')
    w(root, d + '/cpu.stat', 'usage_usec 1000\nuser_usec 600\nsystem_usec 400\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\n')
    w(root, '/proc/self/status', 'Name:\trig\nCpus_allowed_list:\t0-%d\n' % (ncpu - 1))
    task(root, 1, 1, 'systemd', 0)
    task(root, 2, 2, 'kthreadd', 0)  # the host's PID namespace: kernel threads are seen
    task(root, 1771, 1771, 'sshd', 1)

def ec2(root, instance_type, ifaces):
    """What a Nitro instance shows of itself: the DMI identity (x86 and
    Graviton alike) and the kernel's IGMP defaults (force_igmp_version 0:
    IGMPv3) on every interface."""
    for f, v in (('sys_vendor', 'Amazon EC2'), ('board_vendor', 'Amazon EC2'), ('product_name', instance_type)):
        w(root, '/sys/class/dmi/id/' + f, v + '\n')
    for c in ['all', 'default', 'lo'] + ifaces:
        w(root, '/proc/sys/net/ipv4/conf/%s/force_igmp_version' % c, '0\n')

def route(root, default_if, others):
    s = 'Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT                                                       \n'
    s += '%s\t00000000\t0100200A\t0003\t0\t0\t512\t00000000\t0\t0\t0                                                                               \n' % default_if
    for i, (ifc, net) in enumerate([(default_if, '0000200A')] + others):
        s += '%s\t%s\t00000000\t0001\t0\t0\t%d\t00F0FFFF\t0\t0\t0                                                                               \n' % (ifc, net, 512 + i)
    w(root, '/proc/net/route', s)

def c7i():
    root = os.path.join(HERE, 'c7i')
    shutil.rmtree(root, ignore_errors=True)
    n = 8
    # intel_idle's Sapphire Rapids table (spr_cstates) plus the POLL state
    # cpuidle adds on x86; assumed for a c7i.2xlarge guest (see the header).
    states = lambda c: [('POLL', 0, 0, 0, 10 + c, 300), ('C1', 1, 1, 0, 90000, 4000000),
                        ('C1E', 2, 4, 0, 40000, 2000000), ('C6', 290, 800, 0, 700, 900000)]
    aws(root, n, lambda c: '%d,%d' % (c % 4, c % 4 + 4), lambda c: c % 4, '6.1.158-180.294.amzn2023.x86_64', 'x86_64',
        ''.join('processor\t: %d\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\n'
                'model name\t: Intel(R) Xeon(R) Platinum 8488C\nflags\t\t: fpu vme de pse tsc msr pae mce cx8 apic '
                'sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ss ht syscall nx pdpe1gb rdtscp lm '
                'constant_tsc rep_good nopl xtopology nonstop_tsc cpuid tsc_known_freq pni monitor hypervisor\n\n' % c
                for c in range(n)), 'intel_idle', states)
    # The 6.1 x86 PCI MSI domain is global: chip "PCI-MSI", hwirq
    # pci_msi_domain_calc_hwirq() = msi index | bus:devfn << 11 (00:05.0 →
    # 81920, 00:06.0 → 98304, 00:04.0 → 65536). Counts: ens5 queue q fires
    # on CPU q.
    rows = [(0, [36] + [0] * 7, 'IO-APIC', 2, 'edge', ['timer']),
            (1, [0, 9] + [0] * 6, 'IO-APIC', 1, 'edge', ['i8042']),
            (4, [0, 0, 702] + [0] * 5, 'IO-APIC', 4, 'edge', ['ttyS0']),
            (8, [0] * 8, 'IO-APIC', 8, 'edge', ['rtc0']),
            (9, [0] * 8, 'IO-APIC', 9, 'fasteoi', ['acpi']),
            (12, [0] * 3 + [144] + [0] * 4, 'IO-APIC', 12, 'edge', ['i8042']),
            (24, [0, 0, 0, 0, 31, 0, 0, 0], 'PCI-MSI', 65536, 'edge', ['nvme0q0'])]
    rows += [(25 + q, [1200 * (q + 1) if c == 5 * q else 0 for c in range(n)], 'PCI-MSI', 65537 + q, 'edge',
              ['nvme0q%d' % (q + 1)]) for q in range(2)]
    rows += [(27, [0, 0, 0, 0, 0, 12, 0, 0], 'PCI-MSI', 81920, 'edge', ['ena-mgmnt@pci:0000:00:05.0'])]
    rows += [(28 + q, [183000 // (q + 1) if c == q else 0 for c in range(n)], 'PCI-MSI', 81921 + q, 'edge',
              ['ens5-Tx-Rx-%d' % q]) for q in range(8)]
    rows += [(36, [0] * 6 + [3, 0], 'PCI-MSI', 98304, 'edge', ['ena-mgmnt@pci:0000:00:06.0'])]
    rows += [(37 + q, [900 if c == q else 0 for c in range(n)], 'PCI-MSI', 98305 + q, 'edge',
              ['ens6-Tx-Rx-%d' % q]) for q in range(8)]
    w(root, '/proc/interrupts', show_interrupts(n, rows, x86_arch_rows(n, [10, 9, 8, 7, 10, 9, 8, 7]),
                                                24 + 16 + 8 * n + 24 * 16, False))
    # ENA IRQs are not managed: affinity 0-7 (the driver's hint), queue q
    # effective on CPU q. NVMe queues are managed (one per half).
    irqs(root, [(r[0], '0-7', '0') for r in rows if r[0] < 24] + [(24, '0-7', '4'), (25, '0-3', '0'), (26, '4-7', '5')] +
         [(27, '0-7', '5'), (36, '0-7', '6')] + [(28 + q, '0-7', str(q)) for q in range(8)] +
         [(37 + q, '0-7', str(q)) for q in range(8)])
    ena_nic(root, 'ens5', '0000:00:05.0', range(27, 36), 'out-of-tree')
    ena_nic(root, 'ens6', '0000:00:06.0', range(36, 45), 'out-of-tree')
    w(root, '/sys/module/ena/version', '2.15.0g\n')
    w(root, '/sys/module/ena/srcversion', '5C1A7E0F3B9D2E4A6C8B0D1\n')
    w(root, '/sys/module/ena/taint', 'OE\n')
    w(root, '/sys/module/ena/parameters/phc_enable', '0\n')
    route(root, 'ens5', [('ens6', '0010200A')])
    ec2(root, 'c7i.2xlarge', ['ens5', 'ens6'])

def c8g():
    root = os.path.join(HERE, 'c8g')
    shutil.rmtree(root, ignore_errors=True)
    n = 8
    # No cpuidle driver: current_driver reads "none" and no CPU has a
    # cpuidle directory; the idle loop executes WFI (assumed: AWS says
    # Graviton gives the OS no C-state control).
    aws(root, n, lambda c: str(c), lambda c: c, '6.12.46-66.121.amzn2023.aarch64', 'aarch64',
        ''.join('processor\t: %d\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 '
                'atomics fphp asimdhp cpuid asimdrdm jscvt fcma lrcpc dcpop sha3 asimddp sha512 sve asimdfhm dit '
                'uscat ilrcpc flagm sb paca pacg dcpodp sve2 sveaes svepmull svebitperm svesha3 flagm2 frint svei8mm '
                'svebf16 i8mm bf16 dgh rng bti\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\n'
                'CPU part\t: 0xd4f\nCPU revision\t: 1\n\n' % c for c in range(n)), 'none', lambda c: [])
    # GICv3 PPIs/SPIs are Level; ITS MSIs Edge. Kernels with per-device MSI
    # domains name the chip ITS-PCI-MSIX-<BDF> and the hwirq is the MSI-X
    # index.
    rows = [(11, [41000, 39000, 38000, 37000, 40000, 36000, 35000, 34000], 'GICv3', 27, 'Level', ['arch_timer']),
            (13, [0] * 8, 'GICv3', 23, 'Level', ['arm-pmu']),
            (14, [0, 0, 120] + [0] * 5, 'GICv3', 33, 'Level', ['uart-pl011']),
            (15, [0] * 8, 'ITS-PCI-MSIX-0000:00:04.0', 0, 'Edge', ['nvme0q0']),
            (16, [30] + [0] * 7, 'ITS-PCI-MSIX-0000:00:04.0', 1, 'Edge', ['nvme0q1']),
            (17, [0, 0, 0, 0, 22, 0, 0, 0], 'ITS-PCI-MSIX-0000:00:04.0', 2, 'Edge', ['nvme0q2']),
            (18, [0, 14] + [0] * 6, 'ITS-PCI-MSIX-0000:00:05.0', 0, 'Edge', ['ena-mgmnt@pci:0000:00:05.0'])]
    rows += [(19 + q, [212000 // (q + 1) if c == q else 0 for c in range(n)], 'ITS-PCI-MSIX-0000:00:05.0', 1 + q, 'Edge',
              ['ens5-Tx-Rx-%d' % q]) for q in range(8)]
    ipis = ['Rescheduling interrupts', 'Function call interrupts', 'CPU stop interrupts',
            'CPU stop (for crash dump) interrupts', 'Timer broadcast interrupts', 'IRQ work interrupts',
            'CPU backtrace interrupts', 'KGDB roundup interrupts']
    w(root, '/proc/interrupts', show_interrupts(n, rows, arm64_arch_rows(n, [10] * n, ipis), 64, True))
    irqs(root, [(r[0], '0-7', '0') for r in rows if r[0] < 18] + [(18, '0-7', '1')] +
         [(19 + q, '0-7', str(q)) for q in range(8)])
    ena_nic(root, 'ens5', '0000:00:05.0', range(18, 27), 'in-tree')
    w(root, '/sys/module/ena/parameters/.keep', '')
    route(root, 'ens5', [])
    ec2(root, 'c8g.2xlarge', ['ens5'])

def interrupts_files():
    # Standalone /proc/interrupts layouts (the parser's fixtures and fuzz
    # seeds; firecracker and mixed were copied from real hosts). c8g on the
    # AL2023 6.1 kernel: one global ITS MSI domain (chip "ITS-MSI", hwirq
    # msi index | bus:devfn << 11) and IPI0..IPI6 with the wake-up IPI.
    n = 8
    rows = [(11, [41000] * n, 'GICv3', 27, 'Level', ['arch_timer']),
            (12, [0] * n, 'GICv3', 23, 'Level', ['arm-pmu']),
            (14, [0, 0, 120] + [0] * 5, 'GICv3', 33, 'Level', ['uart-pl011']),
            (15, [0] * n, 'ITS-MSI', 65536, 'Edge', ['nvme0q0']),
            (16, [30] + [0] * 7, 'ITS-MSI', 65537, 'Edge', ['nvme0q1']),
            (17, [0, 14] + [0] * 6, 'ITS-MSI', 81920, 'Edge', ['ena-mgmnt@pci:0000:00:05.0'])]
    rows += [(18 + q, [5000 if c == q else 0 for c in range(n)], 'ITS-MSI', 81921 + q, 'Edge', ['ens5-Tx-Rx-%d' % q])
             for q in range(8)]
    ipis = ['Rescheduling interrupts', 'Function call interrupts', 'CPU stop interrupts',
            'CPU stop (for crash dump) interrupts', 'Timer broadcast interrupts', 'IRQ work interrupts',
            'CPU wake-up interrupts']
    w(HERE, '/interrupts/c8g-al2023-6.1', show_interrupts(n, rows, arm64_arch_rows(n, [10] * n, ipis), 64, True))

if __name__ == '__main__':
    if '--vm' in sys.argv:
        copy_vm()
    isolated(); irqbalance(); k8spod(); c7i(); c8g(); interrupts_files()
