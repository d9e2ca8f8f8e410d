//! The system calls a confined command is refused: those a program working on files never
//! needs and that widen what a hostile one can reach — debugging other processes, mounting,
//! the kernel keyring, BPF, userfaultfd, performance counters, io_uring, loading kernel
//! modules, and new namespaces (a new user namespace would give it capabilities again). Each
//! answers `EPERM`, so a program that probes for one carries on; `clone3` answers `ENOSYS`, so
//! the C library falls back to `clone`, whose flags the filter can read (`clone3` passes them
//! in memory, out of a filter's sight).
//!
//! Setting the set-user-ID or set-group-ID bit is refused too: the sandbox is a folder on the
//! server's disk, owned outside by the server's user.
//!
//! The filters are compiled to classic BPF here (seccompiler) and handed to bubblewrap, which
//! installs them right before it starts `sh`. A call from another architecture's table (32-bit
//! `int 0x80` on x86-64) kills the process, so no number can slip past the table the filter was
//! written for.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// Refused unconditionally.
const REFUSED: &[i64] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_bpf,
    libc::SYS_userfaultfd,
    libc::SYS_perf_event_open,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_reboot,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_acct,
    libc::SYS_syslog,
    libc::SYS_quotactl,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_fanotify_init,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_iopl,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_ioperm,
];

/// `fchmodat2` (Linux 6.6), the same number on every architecture's generic table; not yet
/// named by every libc.
const SYS_FCHMODAT2: i64 = 452;

/// x86-64's x32 ABI numbers its system calls with this bit set; each refused call is refused
/// under its x32 number too.
#[cfg(target_arch = "x86_64")]
const X32_BIT: i64 = 0x4000_0000;

/// The filters, each as the bytes of its BPF program (`struct sock_filter` in native order), in
/// the form bubblewrap's `--add-seccomp-fd` reads.
pub fn programs() -> Result<Vec<Vec<u8>>, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|e| format!("no seccomp filter for this architecture: {e}"))?;
    let mut refused: BTreeMap<i64, Vec<SeccompRule>> =
        REFUSED.iter().map(|&nr| (nr, Vec::new())).collect();
    refused.insert(
        libc::SYS_clone,
        vec![flag_set(0, libc::CLONE_NEWUSER as u64)?],
    );
    for (nr, mode_arg) in chmod_calls() {
        refused.insert(
            nr,
            vec![
                flag_set(mode_arg, libc::S_ISUID as u64)?,
                flag_set(mode_arg, libc::S_ISGID as u64)?,
            ],
        );
    }
    with_x32_numbers(&mut refused);
    let mut unknown: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    unknown.insert(libc::SYS_clone3, Vec::new());
    with_x32_numbers(&mut unknown);
    Ok(vec![
        compile(refused, libc::EPERM, arch)?,
        compile(unknown, libc::ENOSYS, arch)?,
    ])
}

/// The calls that set a file's mode, with the index of their mode argument.
fn chmod_calls() -> Vec<(i64, u8)> {
    vec![
        #[cfg(target_arch = "x86_64")]
        (libc::SYS_chmod, 1),
        (libc::SYS_fchmod, 1),
        (libc::SYS_fchmodat, 2),
        (SYS_FCHMODAT2, 2),
    ]
}

#[cfg(target_arch = "x86_64")]
fn with_x32_numbers(rules: &mut BTreeMap<i64, Vec<SeccompRule>>) {
    let x32: Vec<_> = rules
        .iter()
        .map(|(nr, r)| (nr | X32_BIT, r.clone()))
        .collect();
    rules.extend(x32);
}

#[cfg(not(target_arch = "x86_64"))]
fn with_x32_numbers(_: &mut BTreeMap<i64, Vec<SeccompRule>>) {}

/// A rule that matches when argument `arg` has every bit of `flag` set.
fn flag_set(arg: u8, flag: u64) -> Result<SeccompRule, String> {
    let condition = SeccompCondition::new(
        arg,
        SeccompCmpArgLen::Qword,
        SeccompCmpOp::MaskedEq(flag),
        flag,
    )
    .map_err(|e| e.to_string())?;
    SeccompRule::new(vec![condition]).map_err(|e| e.to_string())
}

fn compile(
    rules: BTreeMap<i64, Vec<SeccompRule>>,
    errno: i32,
    arch: TargetArch,
) -> Result<Vec<u8>, String> {
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(errno as u32),
        arch,
    )
    .map_err(|e| e.to_string())?;
    let program: BpfProgram = filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| e.to_string())?;
    let mut bytes = Vec::with_capacity(program.len() * 8);
    for instruction in &program {
        bytes.extend_from_slice(&instruction.code.to_ne_bytes());
        bytes.push(instruction.jt);
        bytes.push(instruction.jf);
        bytes.extend_from_slice(&instruction.k.to_ne_bytes());
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_filters_compile_to_whole_instructions() {
        let programs = programs().unwrap();
        assert_eq!(programs.len(), 2);
        for program in programs {
            assert!(!program.is_empty() && program.len() % 8 == 0);
            // The kernel takes at most 4,096 instructions in one filter.
            assert!(program.len() / 8 <= 4096);
        }
    }
}
