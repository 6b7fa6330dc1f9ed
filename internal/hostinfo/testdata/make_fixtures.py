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
k8spod-shared/  the same node's shared pool beside it: a Burstable pod's
            container, cpuset 0,2-4,6-7 (narrower than the node because the
            pinned pods own 1 and 5), no quota
eks-al2-pinned/, eks-al2-shared/  EKS Amazon Linux 2 node (kernel 5.10,
            cgroup v1, kubelet cgroupDriver cgroupfs, containerd/runc) as
            two containers see it: runc bind-mounts each container's cgroup
            directory at /sys/fs/cgroup/<controllers> (read-only; cpu and
            cpuacct comounted, cpu and cpuacct symlinks), so
            /proc/self/cgroup names /kubepods/... while the files are at the
            mount point. pinned: Guaranteed, 2 CPUs (core 1: CPUs 1,5), a CFS
            quota of 2 CPUs (kubelet < 1.33) that throttled 37 times; shared:
            Burstable, the shared pool 0,2-4,6-7, no quota
c7i/        AWS c7i.2xlarge (x86, Sapphire Rapids, 4 cores x 2 threads), AL2023
            kernel 6.1 layout: PCI-MSI rows, out-of-tree ENA 2.15.0g on ens5
            (8 queues + ena-mgmnt, RX-only packet stamps offered, PHC off) and
            a second ENI ens6, routed by amazon-ec2-net-utils >= 2.5: both
            ENIs' DHCP routes in the main table (default via ens5 metric 512,
            via ens6 metric 513), ens6's copies in table 10001 with a rule
            from its address (run/systemd/network/70-ens6.network.d)
c8g/        AWS c8g.2xlarge (arm64, Graviton4, 8 cores, no SMT), AL2023 kernel
            6.12+ layout: GICv3 and ITS-PCI-MSIX rows with the Edge/Level
            column, IPI0..IPI7 and Err; no cpuidle driver; in-tree ENA on
            ens5, the only interface (it carries the default route)
c7i-ubuntu/ the c7i and c8g instances on Ubuntu 24.04 (linux-aws 6.14, in-tree
c8g-ubuntu/ ENA; x86 rows from per-device MSI domains, PCI-MSIX-BDF) with a
            second ENI ens6 configured by cloud-init's EC2 datasource through
            netplan (etc/netplan/50-cloud-init.yaml): DHCP routes in the main
            table with route-metric 100 (ens5) and 200 (ens6, use-routes),
            ens6's default and subnet routes in table 101, a rule from its
            address
numa2/      two NUMA nodes (CPUs 0-3, 4-7), NIC ens1 on node 1, ens2 with
            numa_node -1, a veth vr0 (no device), RT bandwidth limited
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

def cpu_tree(root, ncpu, siblings, core_of, driver, states, governor=None, cpufreq_driver=None, node_of=lambda c: 0):
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
        node = '%s/node%d' % (d, node_of(c))
        os.makedirs(os.path.join(root, node.lstrip('/')), exist_ok=True)
        # git keeps no empty directory: a placeholder keeps the node link in the tree
        open(os.path.join(root, (node + '/.keep').lstrip('/')), 'w').close()
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

def common(root, cmdline, clocksource, avail, thp, rt_runtime=950000):
    w(root, '/proc/cmdline', cmdline + '\n')
    w(root, '/proc/sys/kernel/sched_rt_runtime_us', '%d\n' % rt_runtime)
    w(root, '/proc/sys/kernel/sched_rt_period_us', '1000000\n')
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
           'tsc', 'tsc hpet acpi_pm', 'madvise', rt_runtime=-1)
    states = lambda c: [('POLL', 0, 0, 0, 5 + c, 100), ('C1', 1, 1, 0, 1000 * (c + 1), 50000),
                        ('C1E', 10, 20, 0, 300 + c, 90000), ('C6', 133, 600, 1 if c in (2, 6) else 0, 7 * c, 400000)]
    cpu_tree(root, n, lambda c: '%d,%d' % (c % 4, c % 4 + 4), lambda c: c % 4, 'intel_idle', states,
             'performance', 'intel_pstate')
    cpu = '/sys/devices/system/cpu'
    w(root, cpu + '/isolated', '2,6\n')
    for c in range(n):  # therm_throt: the core's and the package's throttling events
        w(root, cpu + '/cpu%d/thermal_throttle/core_throttle_count' % c, '3\n')
        w(root, cpu + '/cpu%d/thermal_throttle/package_throttle_count' % c, '11\n')
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

def numa2():
    # Two NUMA nodes (CPUs 0-3 on node 0, 4-7 on node 1, no SMT), RT
    # bandwidth limited (the kernel's default); the NIC ens1 is on node 1,
    # the veth vr0 has no device (no NUMA node) and ens2's platform gives
    # none (numa_node -1).
    root = os.path.join(HERE, 'numa2')
    shutil.rmtree(root, ignore_errors=True)
    n = 8
    common(root, 'BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro', 'tsc', 'tsc hpet', 'madvise')
    cpu_tree(root, n, lambda c: str(c), lambda c: c % 4, 'intel_idle', lambda c: [('POLL', 0, 0, 0, 1, 1), ('C1', 1, 1, 0, 10, 100)],
             node_of=lambda c: c // 4)
    w(root, '/sys/devices/system/cpu/isolated', '\n')
    w(root, '/proc/cpuinfo', 'processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Gold 6346 CPU @ 3.10GHz\n\n')
    w(root, '/proc/interrupts', header(n) + irqline(0, [40] + [0] * 7, 'IO-APIC   2-edge      timer'))
    w(root, '/proc/softirqs', softirqs(n, [100] * n))
    w(root, '/proc/stat', stat(n, [1000] * n))
    irqs(root, [(0, '0', '0')])
    for ifc, bdf, node in (('ens1', '0000:af:00.0', '1'), ('ens2', '0000:3b:00.0', '-1')):
        dev = '/sys/devices/pci0000:00/%s' % bdf
        w(root, dev + '/numa_node', node + '\n')
        w(root, dev + '/net/%s/operstate' % ifc, 'up\n')
        os.makedirs(os.path.join(root, 'sys/class/net'), exist_ok=True)
        os.symlink('../../devices/pci0000:00/%s/net/%s' % (bdf, ifc), os.path.join(root, 'sys/class/net', ifc))
        os.symlink('../../../%s' % bdf, os.path.join(root, (dev + '/net/%s/device' % ifc).lstrip('/')))
    w(root, '/sys/devices/virtual/net/vr0/operstate', 'up\n')
    os.symlink('../../devices/virtual/net/vr0', os.path.join(root, 'sys/class/net/vr0'))
    task(root, 1, 1, 'systemd', 0)
    task(root, 2, 2, 'kthreadd', 0)
    w(root, '/proc/self/status', 'Name:\trig\nCpus_allowed_list:\t0-7\n')
    w(root, '/proc/sys/kernel/random/boot_id', '6b1f4c1e-2f0a-4d7e-9c55-0e1d2a3b4c5d\n')

def k8s_node(root, cmdline):
    # An 8-CPU node (4 cores x 2 threads, siblings c and c+4) with the
    # ENA queue IRQ on CPU 2.
    n = 8
    common(root, cmdline, 'tsc', 'tsc kvm-clock', 'madvise')
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

# A cgroup v2 container with its own cgroup namespace (containerd's
# default on v2): /proc/self/cgroup is "0::/" and the container's cgroup
# is mounted read-only at /sys/fs/cgroup; it is not the hierarchy's root,
# so it has cgroup.type.
def k8s_v2_container(root, cpus, cpu_max, cpu_stat):
    w(root, '/proc/self/cgroup', '0::/\n')
    w(root, '/proc/self/mountinfo',
      '1390 1389 0:52 / / rw,relatime - overlay overlay rw,lowerdir=/l,upperdir=/u,workdir=/w\n'
      '1391 1390 0:55 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw\n'
      '1395 1390 0:58 / /sys ro,nosuid,nodev,noexec,relatime - sysfs sysfs ro\n'
      '1396 1395 0:30 / /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime - cgroup2 cgroup rw,nsdelegate,memory_recursiveprot\n')
    w(root, '/sys/fs/cgroup/cgroup.controllers', 'cpuset cpu io memory pids\n')
    w(root, '/sys/fs/cgroup/cgroup.type', 'domain\n')
    w(root, '/sys/fs/cgroup/cpuset.cpus.effective', cpus + '\n')
    w(root, '/sys/fs/cgroup/cpuset.mems.effective', '0\n')
    w(root, '/sys/fs/cgroup/cpu.max', cpu_max + '\n')
    w(root, '/sys/fs/cgroup/cpu.stat', cpu_stat)
    w(root, '/proc/self/status', 'Name:\trig\nCpus_allowed_list:\t%s\n' % cpus)

def k8spod():
    root = os.path.join(HERE, 'k8spod')
    shutil.rmtree(root, ignore_errors=True)
    k8s_node(root, 'BOOT_IMAGE=/boot/vmlinuz root=/dev/nvme0n1p1 ro console=ttyS0')
    k8s_v2_container(root, '2-3', '200000 100000', 'usage_usec 123456\nuser_usec 100000\nsystem_usec 23456\n'
                     'nr_periods 5000\nnr_throttled 17\nthrottled_usec 84000\nnr_bursts 0\nburst_usec 0\n')

def k8spod_shared():
    root = os.path.join(HERE, 'k8spod-shared')
    shutil.rmtree(root, ignore_errors=True)
    k8s_node(root, 'BOOT_IMAGE=/boot/vmlinuz root=/dev/nvme0n1p1 ro console=ttyS0')
    k8s_v2_container(root, '0,2-4,6-7', 'max 100000', 'usage_usec 923456\nuser_usec 800000\nsystem_usec 123456\n'
                     'nr_periods 0\nnr_throttled 0\nthrottled_usec 0\nnr_bursts 0\nburst_usec 0\n')

def eks_al2(which):
    root = os.path.join(HERE, 'eks-al2-' + which)
    shutil.rmtree(root, ignore_errors=True)
    k8s_node(root, 'BOOT_IMAGE=/boot/vmlinuz-5.10.230-223.885.amzn2.x86_64 root=UUID=2f6a0c51 ro console=tty0 '
             'console=ttyS0,115200n8 net.ifnames=0 biosdevname=0 nvme_core.io_timeout=4294967295')
    w(root, '/proc/sys/kernel/osrelease', '5.10.230-223.885.amzn2.x86_64\n')
    w(root, '/proc/version', 'Linux version 5.10.230-223.885.amzn2.x86_64 (mockbuild@ip-10-0-36-89) (gcc10-gcc (GCC) 10.5.0) #1 SMP\n')
    # kubelet cgroupDriver cgroupfs, cgroupRoot /: Guaranteed pods under
    # /kubepods, Burstable ones under /kubepods/burstable.
    pod = {'pinned': '/kubepods/pod3c2f5e0a-7d41-4b8e-9a51-2f0c6d8e1b77',
           'shared': '/kubepods/burstable/pod91e0b7c4-2a6d-4f3e-8c05-6b1d9a4e7f20'}[which]
    cg = pod + '/' + {'pinned': '4f1c9e2ab7d3', 'shared': '8a2d6f0c1e95'}[which] * 5 + '0123'
    hier = [(11, 'pids'), (10, 'hugetlb'), (9, 'perf_event'), (8, 'net_cls,net_prio'), (7, 'cpuset'),
            (6, 'freezer'), (5, 'memory'), (4, 'devices'), (3, 'blkio'), (2, 'cpu,cpuacct'), (1, 'name=systemd')]
    w(root, '/proc/self/cgroup', ''.join('%d:%s:%s\n' % (i, c, cg) for i, c in hier))
    mi = ('2210 2209 0:301 / / rw,relatime master:641 - overlay overlay rw,lowerdir=/l,upperdir=/u,workdir=/w\n'
          '2211 2210 0:304 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw\n'
          '2215 2210 0:305 / /sys ro,nosuid,nodev,noexec,relatime - sysfs sysfs ro\n'
          '2216 2215 0:306 / /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime - tmpfs tmpfs rw,mode=755\n')
    for k, (i, c) in enumerate(reversed(hier)):
        opts = 'rw,' + c.replace('name=systemd', 'xattr,release_agent=/usr/lib/systemd/systemd-cgroups-agent,name=systemd')
        mp = c.replace('name=', '')
        mi += '%d 2216 0:%d %s /sys/fs/cgroup/%s ro,nosuid,nodev,noexec,relatime master:%d - cgroup cgroup %s\n' % (
            2217 + k, 24 + k, cg, mp, 9 + k, opts)
    w(root, '/proc/self/mountinfo', mi)
    # runc links each comounted controller to the shared directory.
    for a in ('cpu', 'cpuacct', 'net_cls', 'net_prio'):
        link(root, '/sys/fs/cgroup/' + a, {'cpu': 'cpu,cpuacct', 'cpuacct': 'cpu,cpuacct'}.get(a, 'net_cls,net_prio'))
    cpus, quota, stat = {'pinned': ('1,5', '200000', 'nr_periods 5120\nnr_throttled 37\nthrottled_time 912000000\n'),
                         'shared': ('0,2-4,6-7', '-1', 'nr_periods 0\nnr_throttled 0\nthrottled_time 0\n')}[which]
    d = '/sys/fs/cgroup/cpu,cpuacct'
    w(root, d + '/cpu.cfs_quota_us', quota + '\n')
    w(root, d + '/cpu.cfs_period_us', '100000\n')
    w(root, d + '/cpu.shares', {'pinned': '2048', 'shared': '512'}[which] + '\n')
    w(root, d + '/cpu.stat', stat)
    w(root, '/sys/fs/cgroup/cpuset/cpuset.cpus', cpus + '\n')
    w(root, '/sys/fs/cgroup/cpuset/cpuset.effective_cpus', cpus + '\n')
    w(root, '/sys/fs/cgroup/cpuset/cpuset.mems', '0\n')
    w(root, '/proc/self/status', 'Name:\trig\nCpus_allowed_list:\t%s\n' % cpus)

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

def aws(root, ncpu, siblings, core_of, kernel, arch, cpuinfo, idle_driver, states, ubuntu=False):
    cmdline = ('BOOT_IMAGE=(hd0,gpt1)/boot/vmlinuz-%s root=UUID=0c1a2b3c ro console=tty0 console=ttyS0,115200n8 '
               'nvme_core.io_timeout=4294967295 rd.emergency=poweroff rd.shell=0 selinux=1 security=selinux quiet')
    if ubuntu:
        cmdline = ('BOOT_IMAGE=/vmlinuz-%s root=PARTUUID=5f0e9d4c-01 ro console=tty1 console=ttyS0 '
                   'nvme_core.io_timeout=4294967295 panic=-1')
    common(root, cmdline % kernel,
           *(('tsc', 'tsc kvm-clock hpet acpi_pm') if arch == 'x86_64' else ('arch_sys_counter', 'arch_sys_counter')),
           'madvise')
    w(root, '/proc/sys/kernel/osrelease', kernel + '\n')
    w(root, '/proc/version', ('Linux version %s (buildd@lcy02-amd64-080) (x86_64-linux-gnu-gcc-13 (Ubuntu 13.3.0-6ubuntu2~24.04) '
                              '13.3.0) #15~24.04.1-Ubuntu SMP\n' if ubuntu else
                              'Linux version %s (mockbuild@ip-10-0-40-1) (gcc (GCC) 11.5.0) #1 SMP\n') % kernel)
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

def ip4(a):
    """An IPv4 address as /proc/net/route prints it (hex, host order)."""
    b = [int(x) for x in a.split('.')]
    return '%02X%02X%02X%02X' % (b[3], b[2], b[1], b[0])

def route(root, rows):
    """/proc/net/route (the main table only: fib_route_seq_show), each line
    padded to 127 characters. rows: (iface, destination, gateway or None,
    prefix length, metric)."""
    s = '%-127s\n' % 'Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT'
    for ifc, dst, gw, plen, metric in rows:
        flags = 0x1 | (0x2 if gw else 0) | (0x4 if plen == 32 else 0)  # RTF_UP, RTF_GATEWAY, RTF_HOST
        mask = '.'.join(str((0xffffffff << (32 - plen) >> (24 - 8 * i)) & 0xff) for i in range(4)) if plen else '0.0.0.0'
        s += '%-127s\n' % ('%s\t%s\t%s\t%04X\t0\t0\t%d\t%s\t0\t0\t0' % (ifc, ip4(dst), ip4(gw or '0.0.0.0'), flags, metric, ip4(mask)))
    w(root, '/proc/net/route', s)

def dhcp_routes(ifc, subnet, plen, gw, metric, dns='10.32.0.2'):
    """What systemd-networkd installs in the main table from a DHCPv4 lease
    on EC2: the default route, the prefix route, a host route to the
    gateway and one to the VPC resolver (RoutesToDNS=yes)."""
    rows = [(ifc, '0.0.0.0', gw, 0, metric), (ifc, subnet, None, plen, metric), (ifc, gw, None, 32, metric)]
    on_link = dns.split('.')[:3] == subnet.split('.')[:3]
    return rows + [(ifc, dns, None if on_link else gw, 32, metric)]

def ec2_routing(root, ubuntu, enis):
    """The main table with a second ENI (ens6), and the files that make it:
    cloud-init's netplan config on Ubuntu (convert_ec2_metadata_network_config:
    route-metric (index+1)*100, policy table 100+index), amazon-ec2-net-utils'
    drop-ins on AL2023 (create_if_overrides, create_rules: metric 512+index,
    table and rule priority 10000+index). enis: (iface, mac, address)."""
    rows = []
    for i, (ifc, mac, addr) in enumerate(enis):
        net = '10.32.%d.0' % (16 * i)
        rows += dhcp_routes(ifc, net, 20, '10.32.%d.1' % (16 * i), (i + 1) * 100 if ubuntu else 512 + i)
    # the trie's order: by destination, then prefix length, then metric
    route(root, sorted(rows, key=lambda r: ([int(x) for x in r[1].split('.')], r[3], r[4])))
    if ubuntu:
        y = 'network:\n  version: 2\n  ethernets:\n'
        for i, (ifc, mac, addr) in enumerate(enis):
            y += ('    %s:\n      match:\n        macaddress: "%s"\n      dhcp4: true\n      dhcp4-overrides:\n'
                  '        route-metric: %d\n' % (ifc, mac, (i + 1) * 100))
            if i > 0:
                y += '        use-routes: true\n'
            y += '      dhcp6: false\n      set-name: "%s"\n' % ifc
            if i > 0:
                y += ('      routes:\n      - to: "0.0.0.0/0"\n        via: "10.32.%d.1"\n        table: %d\n'
                      '      - to: "10.32.%d.0/20"\n        table: %d\n      routing-policy:\n      - from: "%s"\n'
                      '        table: %d\n' % (16 * i, 100 + i, 16 * i, 100 + i, addr, 100 + i))
        w(root, '/etc/netplan/50-cloud-init.yaml', y)
        return
    for i, (ifc, mac, addr) in enumerate(enis):
        d = '/run/systemd/network/70-%s.network.d/' % ifc
        w(root, d + 'eni.conf', '# Configuration for %s generated by policy-routes@%s.service\n[Match]\nMACAddress=%s\n'
          '[Network]\nDHCP=yes\n\n[DHCPv4]\nRouteMetric=%d\nUseRoutes=true\nUseGateway=true\n\n[IPv6AcceptRA]\n'
          'RouteMetric=%d\nUseGateway=true\n\n[Route]\nTable=%d\nGateway=_ipv6ra\n\n[Route]\nGateway=_dhcp4\nTable=%d\n'
          '[Route]\nTable=%d\nDestination=10.32.%d.0/20\n' % (ifc, ifc, mac, 512 + i, 512 + i, 10000 + i, 10000 + i, 10000 + i, 16 * i))
        if i > 0:
            w(root, d + 'ec2net_policy_4.conf', '[RoutingPolicyRule]\nFrom=%s\nPriority=%d\nTable=%d\n' % (addr, 10000 + i, 10000 + i))

ENIS = [('ens5', '0a:3c:51:7e:20:01', '10.32.0.10'), ('ens6', '0a:3c:51:7e:20:02', '10.32.16.20')]

def c7i(ubuntu=False):
    root = os.path.join(HERE, 'c7i-ubuntu' if ubuntu else 'c7i')
    shutil.rmtree(root, ignore_errors=True)
    n = 8
    # intel_idle's Sapphire Rapids table (spr_cstates) plus the POLL state
    # cpuidle adds on x86; assumed for a c7i.2xlarge guest (see the header).
    states = lambda c: [('POLL', 0, 0, 0, 10 + c, 300), ('C1', 1, 1, 0, 90000, 4000000),
                        ('C1E', 2, 4, 0, 40000, 2000000), ('C6', 290, 800, 0, 700, 900000)]
    kernel = '6.14.0-1015-aws' if ubuntu else '6.1.158-180.294.amzn2023.x86_64'
    aws(root, n, lambda c: '%d,%d' % (c % 4, c % 4 + 4), lambda c: c % 4, kernel, 'x86_64',
        ''.join('processor\t: %d\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\n'
                'model name\t: Intel(R) Xeon(R) Platinum 8488C\nflags\t\t: fpu vme de pse tsc msr pae mce cx8 apic '
                'sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ss ht syscall nx pdpe1gb rdtscp lm '
                'constant_tsc rep_good nopl xtopology nonstop_tsc cpuid tsc_known_freq pni monitor hypervisor\n\n' % c
                for c in range(n)), 'intel_idle', states, ubuntu)
    # The 6.1 x86 PCI MSI domain is global: chip "PCI-MSI", hwirq
    # pci_msi_domain_calc_hwirq() = msi index | bus:devfn << 11 (00:05.0 →
    # 81920, 00:06.0 → 98304, 00:04.0 → 65536). Later kernels give each
    # device its own domain: chip PCI-MSIX-<BDF>, hwirq the MSI-X index.
    # Counts: ens5 queue q fires on CPU q.
    def msi(bdf, dev, index):
        return ('PCI-MSIX-0000:00:%s.0' % bdf, index) if ubuntu else ('PCI-MSI', index | dev << 14)
    rows = [(0, [36] + [0] * 7, 'IO-APIC', 2, 'edge', ['timer']),
            (1, [0, 9] + [0] * 6, 'IO-APIC', 1, 'edge', ['i8042']),
            (4, [0, 0, 702] + [0] * 5, 'IO-APIC', 4, 'edge', ['ttyS0']),
            (8, [0] * 8, 'IO-APIC', 8, 'edge', ['rtc0']),
            (9, [0] * 8, 'IO-APIC', 9, 'fasteoi', ['acpi']),
            (12, [0] * 3 + [144] + [0] * 4, 'IO-APIC', 12, 'edge', ['i8042']),
            (24, [0, 0, 0, 0, 31, 0, 0, 0], *msi('04', 4, 0), 'edge', ['nvme0q0'])]
    rows += [(25 + q, [1200 * (q + 1) if c == 5 * q else 0 for c in range(n)], *msi('04', 4, 1 + q), 'edge',
              ['nvme0q%d' % (q + 1)]) for q in range(2)]
    rows += [(27, [0, 0, 0, 0, 0, 12, 0, 0], *msi('05', 5, 0), 'edge', ['ena-mgmnt@pci:0000:00:05.0'])]
    rows += [(28 + q, [183000 // (q + 1) if c == q else 0 for c in range(n)], *msi('05', 5, 1 + q), 'edge',
              ['ens5-Tx-Rx-%d' % q]) for q in range(8)]
    rows += [(36, [0] * 6 + [3, 0], *msi('06', 6, 0), 'edge', ['ena-mgmnt@pci:0000:00:06.0'])]
    rows += [(37 + q, [900 if c == q else 0 for c in range(n)], *msi('06', 6, 1 + q), 'edge',
              ['ens6-Tx-Rx-%d' % q]) for q in range(8)]
    w(root, '/proc/interrupts', show_interrupts(n, rows, x86_arch_rows(n, [10, 9, 8, 7, 10, 9, 8, 7]),
                                                24 + 16 + 8 * n + 24 * 16, False))
    # ENA IRQs are not managed: affinity 0-7 (the driver's hint), queue q
    # effective on CPU q. NVMe queues are managed (one per half).
    irqs(root, [(r[0], '0-7', '0') for r in rows if r[0] < 24] + [(24, '0-7', '4'), (25, '0-3', '0'), (26, '4-7', '5')] +
         [(27, '0-7', '5'), (36, '0-7', '6')] + [(28 + q, '0-7', str(q)) for q in range(8)] +
         [(37 + q, '0-7', str(q)) for q in range(8)])
    module = 'in-tree' if ubuntu else 'out-of-tree'
    ena_nic(root, 'ens5', '0000:00:05.0', range(27, 36), module)
    ena_nic(root, 'ens6', '0000:00:06.0', range(36, 45), module)
    if ubuntu:
        w(root, '/sys/module/ena/parameters/.keep', '')
    else:
        w(root, '/sys/module/ena/version', '2.15.0g\n')
        w(root, '/sys/module/ena/srcversion', '5C1A7E0F3B9D2E4A6C8B0D1\n')
        w(root, '/sys/module/ena/taint', 'OE\n')
        w(root, '/sys/module/ena/parameters/phc_enable', '0\n')
    ec2_routing(root, ubuntu, ENIS)
    ec2(root, 'c7i.2xlarge', ['ens5', 'ens6'])

def c8g(ubuntu=False):
    root = os.path.join(HERE, 'c8g-ubuntu' if ubuntu else 'c8g')
    shutil.rmtree(root, ignore_errors=True)
    n = 8
    # No cpuidle driver: current_driver reads "none" and no CPU has a
    # cpuidle directory; the idle loop executes WFI (assumed: AWS says
    # Graviton gives the OS no C-state control).
    kernel = '6.14.0-1015-aws' if ubuntu else '6.12.46-66.121.amzn2023.aarch64'
    aws(root, n, lambda c: str(c), lambda c: c, kernel, 'aarch64',
        ''.join('processor\t: %d\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 '
                'atomics fphp asimdhp cpuid asimdrdm jscvt fcma lrcpc dcpop sha3 asimddp sha512 sve asimdfhm dit '
                'uscat ilrcpc flagm sb paca pacg dcpodp sve2 sveaes svepmull svebitperm svesha3 flagm2 frint svei8mm '
                'svebf16 i8mm bf16 dgh rng bti\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\n'
                'CPU part\t: 0xd4f\nCPU revision\t: 1\n\n' % c for c in range(n)), 'none', lambda c: [], ubuntu)
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
    if ubuntu:  # the second ENI, attached before the boot
        rows += [(27, [0, 0, 3] + [0] * 5, 'ITS-PCI-MSIX-0000:00:06.0', 0, 'Edge', ['ena-mgmnt@pci:0000:00:06.0'])]
        rows += [(28 + q, [900 if c == q else 0 for c in range(n)], 'ITS-PCI-MSIX-0000:00:06.0', 1 + q, 'Edge',
                  ['ens6-Tx-Rx-%d' % q]) for q in range(8)]
    ipis = ['Rescheduling interrupts', 'Function call interrupts', 'CPU stop interrupts',
            'CPU stop (for crash dump) interrupts', 'Timer broadcast interrupts', 'IRQ work interrupts',
            'CPU backtrace interrupts', 'KGDB roundup interrupts']
    w(root, '/proc/interrupts', show_interrupts(n, rows, arm64_arch_rows(n, [10] * n, ipis), 64, True))
    irqs(root, [(r[0], '0-7', '0') for r in rows if r[0] < 18] + [(18, '0-7', '1')] +
         [(19 + q, '0-7', str(q)) for q in range(8)] + ([(27, '0-7', '2')] + [(28 + q, '0-7', str(q)) for q in range(8)]) * ubuntu)
    ena_nic(root, 'ens5', '0000:00:05.0', range(18, 27), 'in-tree')
    enis = ENIS[:1]
    if ubuntu:
        ena_nic(root, 'ens6', '0000:00:06.0', range(27, 36), 'in-tree')
        enis = ENIS
    w(root, '/sys/module/ena/parameters/.keep', '')
    ec2_routing(root, ubuntu, enis)
    ec2(root, 'c8g.2xlarge', [e[0] for e in enis])

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
    isolated(); irqbalance(); k8spod(); k8spod_shared(); eks_al2('pinned'); eks_al2('shared'); c7i(); c8g(); c7i(ubuntu=True); c8g(ubuntu=True); numa2(); interrupts_files()
