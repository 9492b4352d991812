//! `run --trace FILE` (Perfetto protobuf) and `run --ftrace FILE` (ftrace
//! text): writers for the tracepoints the engine recorded
//! (`schedlab_engine::trace`). Both are deterministic: same run, same bytes.

pub mod ftrace;
pub mod perfetto;
pub mod proto;

use schedlab_kernel::profile::KernelProfile;

/// What the trace says about the "system" it was recorded on.
pub struct Meta {
    /// `uname -r`: the profile's version as a release, e.g. `6.12.0-schedlab`.
    pub release: String,
    /// `uname -v`: names the run (machine, profile, seed).
    pub version: String,
}

impl Meta {
    pub fn new(machine: &str, profile: &KernelProfile, seed: u64) -> Meta {
        Meta { release: release_of(profile), version: format!("#1 SMP schedlab machine={machine} kernel={} seed={seed}", profile.name) }
    }
}

/// The utsname release for a profile. The trace is written in the tracepoint
/// layouts of v5.14+ kernels whatever the profile; Perfetto decodes
/// `prev_state` by the release (TaskState::FromRawPrevState: the 0x100
/// "preempted" bit means R+ only from 4.14), so profiles older than 4.14
/// report 4.14.0 with the profile named after it.
// FIDELITY(F-401): traces use the v5.14+ tracepoint layouts for every profile.
pub fn release_of(profile: &KernelProfile) -> String {
    let (maj, min) = profile.version;
    if (maj, min) < (4, 14) {
        format!("4.14.0-schedlab-{}", profile.name)
    } else {
        format!("{maj}.{min}.0-schedlab")
    }
}
