//! What the machine is, beyond its model name: clock, caches, SMT and virtualisation, as
//! Linux describes them under `/proc` and `/sys`.
//!
//! A lock's cost is mostly the cost of the cache lines it touches, so a reader of a record
//! needs the caches' sizes (does the working set fit?), whether two "cores" are SMT
//! siblings sharing one core's caches, and whether the cores are a hypervisor's vCPUs
//! (whose placement can change under load, see [`super::machine`]). Every reader here
//! takes the text of the files, or a root directory to read them under, so the tests feed
//! them fake machines; [`Hardware::read`] reads the real one under `/`. Each says only what
//! its files show, and "unknown" where they are missing:
//!
//! - **clock**: `cpu MHz` of the first processor in `/proc/cpuinfo` (what the kernel
//!   reports at the start of the run: the current frequency on bare metal with frequency
//!   scaling, usually a fixed value in a VM), and the nominal `@ x.xxGHz` of the model name
//!   where the vendor puts one there ([`nominal_ghz`]);
//! - **caches**: `/sys/devices/system/cpu/cpu0/cache/index*/{level,type,size,
//!   shared_cpu_list}`, each with how many CPUs share it (in a VM: what the hypervisor
//!   presents, so a host cache shared with other guests counts only this guest's CPUs);
//! - **SMT**: threads per core from `cpu0/topology/thread_siblings_list`, else `siblings` /
//!   `cpu cores` of `/proc/cpuinfo`;
//! - **virtualisation**: the `hypervisor` CPU flag of `/proc/cpuinfo` (x86: the CPU says it
//!   runs under a hypervisor), the hypervisor's name from `/sys/hypervisor/type`, the CPUID
//!   hypervisor leaf (x86, what `lscpu` reads) or `/sys/class/dmi/id/{sys_vendor,
//!   product_name}`. "bare metal" only when an x86 `flags` line lacks the flag and nothing
//!   else names a hypervisor; elsewhere (an ARM `Features` line has no such flag) "unknown".

use std::path::Path;

use serde::{Deserialize, Serialize};

/// One cache of CPU 0.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cache {
    /// 1, 2, 3, ...
    pub level: u8,
    /// `Data`, `Instruction` or `Unified` (the `type` file).
    pub kind: String,
    /// Size in KiB.
    pub size_kib: u64,
    /// How many CPUs share it (`shared_cpu_list`); 1: private to CPU 0.
    pub shared_by: usize,
}

impl Cache {
    /// `L1d`, `L1i`, `L2`, ...
    pub fn name(&self) -> String {
        let suffix = match self.kind.as_str() {
            "Data" => "d",
            "Instruction" => "i",
            _ => "",
        };
        format!("L{}{suffix}", self.level)
    }

    /// `L3 32 MiB (shared by 2 CPUs)` or `L1d 48 KiB (private)`.
    pub fn describe(&self) -> String {
        let size = if self.size_kib >= 1024 && self.size_kib % 1024 == 0 {
            format!("{} MiB", self.size_kib / 1024)
        } else {
            format!("{} KiB", self.size_kib)
        };
        let sharing = match self.shared_by {
            0 | 1 => "private".to_owned(),
            n => format!("shared by {n} CPUs"),
        };
        format!("{} {size} ({sharing})", self.name())
    }
}

/// What [`Hardware::read`] found (each `None` or empty where the files do not say).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Hardware {
    /// `cpu MHz` of the first processor in `/proc/cpuinfo`.
    pub cpu_mhz: Option<f64>,
    /// CPU 0's caches, by level and kind.
    pub caches: Vec<Cache>,
    /// Hardware threads per core.
    pub threads_per_core: Option<usize>,
    /// `VM (KVM): ...`, `VM: ...`, `bare metal: ...` or `unknown` ([`virtualization`]).
    pub virtualization: String,
}

impl Hardware {
    /// Reads the files under `root` (`/` for this machine); `cpuid_vendor` is the CPUID
    /// hypervisor vendor ([`cpuid_hypervisor_vendor`], `None` for a fake root).
    pub fn read(root: &Path, cpuid_vendor: Option<&str>) -> Hardware {
        let read = |rel: &str| std::fs::read_to_string(root.join(rel)).ok();
        let cpuinfo = read("proc/cpuinfo");
        let cpu0 = root.join("sys/devices/system/cpu/cpu0");
        let siblings = std::fs::read_to_string(cpu0.join("topology/thread_siblings_list")).ok();
        let threads_per_core = siblings
            .as_deref()
            .and_then(cpu_list_len)
            .or_else(|| cpuinfo.as_deref().and_then(threads_per_core));
        Hardware {
            cpu_mhz: cpuinfo.as_deref().and_then(cpu_mhz),
            caches: caches(&cpu0.join("cache")),
            threads_per_core,
            virtualization: virtualization(&Signs {
                cpuinfo: cpuinfo.as_deref(),
                hypervisor_type: read("sys/hypervisor/type").as_deref(),
                cpuid_vendor,
                dmi_vendor: read("sys/class/dmi/id/sys_vendor").as_deref(),
                dmi_product: read("sys/class/dmi/id/product_name").as_deref(),
            }),
        }
    }

    /// This machine's.
    pub fn current() -> Hardware {
        Hardware::read(Path::new("/"), cpuid_hypervisor_vendor().as_deref())
    }
}

/// The value of the first `key : value` line of `/proc/cpuinfo` text.
pub(crate) fn cpuinfo_value<'a>(cpuinfo: &'a str, key: &str) -> Option<&'a str> {
    cpuinfo.lines().find_map(|line| {
        let (k, v) = line.split_once(':')?;
        (k.trim() == key).then(|| v.trim())
    })
}

/// `cpu MHz` of the first processor.
pub fn cpu_mhz(cpuinfo: &str) -> Option<f64> {
    cpuinfo_value(cpuinfo, "cpu MHz")?.parse().ok().filter(|m: &f64| *m > 0.0)
}

/// The nominal clock in a model name, `Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz` -> 2.4.
pub fn nominal_ghz(model: &str) -> Option<f64> {
    let (_, after) = model.rsplit_once('@')?;
    let after = after.trim();
    let number = after.strip_suffix("GHz").or_else(|| after.strip_suffix("Ghz"))?;
    number.trim().parse().ok().filter(|g: &f64| *g > 0.0)
}

/// `siblings` / `cpu cores` of the first processor (both per package).
fn threads_per_core(cpuinfo: &str) -> Option<usize> {
    let siblings: usize = cpuinfo_value(cpuinfo, "siblings")?.parse().ok()?;
    let cores: usize = cpuinfo_value(cpuinfo, "cpu cores")?.parse().ok()?;
    (cores > 0 && siblings >= cores).then(|| siblings / cores)
}

/// How many CPUs a kernel CPU list names: `0-1,4` -> 3.
pub fn cpu_list_len(list: &str) -> Option<usize> {
    let list = list.trim();
    if list.is_empty() {
        return None;
    }
    let mut n = 0;
    for part in list.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                n += b.checked_sub(a)? + 1;
            }
            None => {
                part.trim().parse::<usize>().ok()?;
                n += 1;
            }
        }
    }
    Some(n)
}

/// A cache `size` file's text in KiB: `32K` -> 32, `2M` -> 2048.
fn size_kib(text: &str) -> Option<u64> {
    let t = text.trim();
    let (number, scale) = match t.char_indices().last()? {
        (i, 'K') => (&t[..i], 1),
        (i, 'M') => (&t[..i], 1024),
        (i, 'G') => (&t[..i], 1024 * 1024),
        _ => (t, 0), // bytes
    };
    let n: u64 = number.trim().parse().ok()?;
    Some(if scale == 0 { n / 1024 } else { n * scale })
}

/// The caches described under `dir` (`.../cpu0/cache`): every `index*` with a level, a
/// type and a size, sorted by level and kind (data before instruction).
fn caches(dir: &Path) -> Vec<Cache> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut out: Vec<Cache> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("index"))
        .filter_map(|e| {
            let read = |f: &str| std::fs::read_to_string(e.path().join(f)).ok();
            Some(Cache {
                level: read("level")?.trim().parse().ok()?,
                kind: read("type")?.trim().to_owned(),
                size_kib: size_kib(&read("size")?)?,
                shared_by: read("shared_cpu_list").as_deref().and_then(cpu_list_len).unwrap_or(1),
            })
        })
        .collect();
    out.sort_by(|a, b| (a.level, &a.kind).cmp(&(b.level, &b.kind)));
    out
}

/// The texts [`virtualization`] decides from (`None`: the file is missing).
#[derive(Clone, Copy, Debug, Default)]
pub struct Signs<'a> {
    /// `/proc/cpuinfo`.
    pub cpuinfo: Option<&'a str>,
    /// `/sys/hypervisor/type` (`xen`, ...).
    pub hypervisor_type: Option<&'a str>,
    /// The CPUID hypervisor vendor signature (`KVMKVMKVM`, ...).
    pub cpuid_vendor: Option<&'a str>,
    /// `/sys/class/dmi/id/sys_vendor`.
    pub dmi_vendor: Option<&'a str>,
    /// `/sys/class/dmi/id/product_name`.
    pub dmi_product: Option<&'a str>,
}

/// Whether the machine is a VM, as far as `signs` show: `VM (KVM): <evidence>`,
/// `VM: <evidence>` (a hypervisor, not named), `bare metal: <evidence>` or `unknown`.
pub fn virtualization(signs: &Signs<'_>) -> String {
    let flags = signs.cpuinfo.and_then(|c| cpuinfo_value(c, "flags"));
    let flag = flags.is_some_and(|f| f.split_whitespace().any(|w| w == "hypervisor"));
    let mut evidence = Vec::new();
    if flag {
        evidence.push("hypervisor flag in /proc/cpuinfo".to_owned());
    }
    let mut name = None;
    if let Some(t) = signs.hypervisor_type.map(str::trim).filter(|t| !t.is_empty()) {
        name = Some(match t {
            "xen" => "Xen".to_owned(),
            other => other.to_owned(),
        });
        evidence.push(format!("/sys/hypervisor/type {t}"));
    }
    if let Some(v) = signs.cpuid_vendor.and_then(cpuid_name) {
        name.get_or_insert_with(|| v.to_owned());
        evidence.push(format!("CPUID hypervisor leaf {v}"));
    }
    let dmi = [signs.dmi_vendor, signs.dmi_product].map(|t| t.map(str::trim).unwrap_or(""));
    if let Some(v) = dmi_name(dmi[0], dmi[1]) {
        name.get_or_insert_with(|| v.to_owned());
        evidence.push(format!("DMI {} {}", dmi[0], dmi[1]).trim_end().to_owned());
    }
    match (name, evidence.is_empty()) {
        (Some(n), _) => format!("VM ({n}): {}", evidence.join(", ")),
        (None, false) => format!("VM (hypervisor not named): {}", evidence.join(", ")),
        // An x86 flags line without the flag: no hypervisor says it is there.
        (None, true) if flags.is_some() => {
            "bare metal: no hypervisor flag in /proc/cpuinfo, no hypervisor named".to_owned()
        }
        (None, true) => "unknown".to_owned(),
    }
}

/// The hypervisor a CPUID vendor signature names.
fn cpuid_name(signature: &str) -> Option<&'static str> {
    let s = signature.trim_matches(|c: char| c == '\0' || c.is_whitespace());
    [
        ("KVMKVMKVM", "KVM"),
        ("Microsoft Hv", "Hyper-V"),
        ("VMwareVMware", "VMware"),
        ("XenVMMXenVMM", "Xen"),
        ("TCGTCGTCGTCG", "QEMU TCG"),
        ("VBoxVBoxVBox", "VirtualBox"),
        ("bhyve bhyve", "bhyve"),
        ("ACRNACRNACRN", "ACRN"),
        ("lrpepyh  vr", "Parallels"),
        ("QNXQVMBSQG", "QNX"),
    ]
    .into_iter()
    .find_map(|(sig, name)| (s == sig).then_some(name))
}

/// The hypervisor the DMI vendor and product names name.
fn dmi_name(vendor: &str, product: &str) -> Option<&'static str> {
    let both = format!("{vendor} {product}");
    let has = |s: &str| both.contains(s);
    if has("QEMU") {
        Some("QEMU")
    } else if has("KVM") {
        Some("KVM")
    } else if has("VMware") {
        Some("VMware")
    } else if has("VirtualBox") || has("innotek") {
        Some("VirtualBox")
    } else if vendor == "Microsoft Corporation" && product == "Virtual Machine" {
        Some("Hyper-V")
    } else if has("Xen") {
        Some("Xen")
    } else if has("Amazon EC2") {
        Some("Amazon EC2")
    } else if has("Google Compute Engine") {
        Some("Google Compute Engine")
    } else {
        None
    }
}

/// The hypervisor vendor signature of CPUID leaf `0x4000_0000` (x86 with the `hypervisor`
/// flag; what `lscpu` shows as "Hypervisor vendor"); `None` elsewhere.
#[allow(unused_unsafe)] // `__cpuid` is a safe function in newer Rust, unsafe in older
pub fn cpuid_hypervisor_vendor() -> Option<String> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::__cpuid;
        // Leaf 1, ECX bit 31: "hypervisor present". Only then does leaf 0x4000_0000 mean
        // anything (on bare metal it returns whatever the highest basic leaf holds).
        // SAFETY: CPUID exists on every x86_64 CPU; leaf 1 is always implemented.
        let present = unsafe { __cpuid(1) }.ecx & (1 << 31) != 0;
        if !present {
            return None;
        }
        // SAFETY: as above; a leaf out of range returns data, it does not fault.
        let r = unsafe { __cpuid(0x4000_0000) };
        let bytes: Vec<u8> = [r.ebx, r.ecx, r.edx].iter().flat_map(|w| w.to_le_bytes()).collect();
        let text = String::from_utf8_lossy(&bytes).trim_end_matches('\0').to_owned();
        (!text.is_empty()).then_some(text)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    const CPUINFO_VM: &str = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC\n\
        cpu MHz\t\t: 2445.404\nsiblings\t: 2\ncpu cores\t: 2\nflags\t\t: fpu sse2 hypervisor lahf_lm\n\n\
        processor\t: 1\ncpu MHz\t\t: 1000.0\n";
    const CPUINFO_METAL: &str = "processor\t: 0\nmodel name\t: Intel(R) Core(TM) i7-8550U CPU @ \
        1.80GHz\ncpu MHz\t\t: 3400.112\nsiblings\t: 8\ncpu cores\t: 4\nflags\t\t: fpu sse2 ht\n";
    const CPUINFO_ARM: &str = "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd\n";

    /// A fake root with `files` (path relative to the root, text).
    fn root(tag: &str, files: &[(&str, &str)]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("rangelock-hw-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (rel, text) in files {
            let path = dir.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    }

    #[test]
    fn the_clock_is_the_first_processors_and_the_models_nominal_one() {
        assert_eq!(cpu_mhz(CPUINFO_VM), Some(2445.404));
        assert_eq!(cpu_mhz(CPUINFO_ARM), None);
        assert_eq!(nominal_ghz("Intel(R) Core(TM) i7-8550U CPU @ 1.80GHz"), Some(1.8));
        assert_eq!(nominal_ghz("AMD EPYC"), None);
        assert_eq!(nominal_ghz("Intel(R) Xeon(R) Processor"), None);
    }

    #[test]
    fn cpu_lists_and_cache_sizes_parse() {
        assert_eq!(cpu_list_len("0"), Some(1));
        assert_eq!(cpu_list_len("0-1\n"), Some(2));
        assert_eq!(cpu_list_len("0-3,8,10-11"), Some(7));
        assert_eq!(cpu_list_len(""), None);
        assert_eq!(cpu_list_len("3-1"), None);
        assert_eq!(size_kib("32K\n"), Some(32));
        assert_eq!(size_kib("2M"), Some(2048));
        assert_eq!(size_kib("65536"), Some(64));
        assert_eq!(size_kib("lots"), None);
    }

    #[test]
    fn a_fake_vm_reads_as_a_vm_with_its_caches_and_one_thread_per_core() {
        let dir = root(
            "vm",
            &[
                ("proc/cpuinfo", CPUINFO_VM),
                ("sys/devices/system/cpu/cpu0/topology/thread_siblings_list", "0\n"),
                ("sys/devices/system/cpu/cpu0/cache/index0/level", "1\n"),
                ("sys/devices/system/cpu/cpu0/cache/index0/type", "Data\n"),
                ("sys/devices/system/cpu/cpu0/cache/index0/size", "32K\n"),
                ("sys/devices/system/cpu/cpu0/cache/index0/shared_cpu_list", "0\n"),
                ("sys/devices/system/cpu/cpu0/cache/index1/level", "1\n"),
                ("sys/devices/system/cpu/cpu0/cache/index1/type", "Instruction\n"),
                ("sys/devices/system/cpu/cpu0/cache/index1/size", "32K\n"),
                ("sys/devices/system/cpu/cpu0/cache/index3/level", "3\n"),
                ("sys/devices/system/cpu/cpu0/cache/index3/type", "Unified\n"),
                ("sys/devices/system/cpu/cpu0/cache/index3/size", "32768K\n"),
                ("sys/devices/system/cpu/cpu0/cache/index3/shared_cpu_list", "0-1\n"),
                ("sys/devices/system/cpu/cpu0/cache/index2/level", "2\n"),
                ("sys/devices/system/cpu/cpu0/cache/index2/type", "Unified\n"),
                ("sys/devices/system/cpu/cpu0/cache/index2/size", "512K\n"),
                ("sys/devices/system/cpu/cpu0/cache/index2/shared_cpu_list", "0\n"),
            ],
        );
        let hw = Hardware::read(&dir, Some("KVMKVMKVM\0\0\0"));
        assert_eq!(hw.cpu_mhz, Some(2445.404));
        assert_eq!(hw.threads_per_core, Some(1));
        let caches: Vec<String> = hw.caches.iter().map(Cache::describe).collect();
        assert_eq!(
            caches,
            [
                "L1d 32 KiB (private)",
                "L1i 32 KiB (private)",
                "L2 512 KiB (private)",
                "L3 32 MiB (shared by 2 CPUs)"
            ]
        );
        assert_eq!(
            hw.virtualization,
            "VM (KVM): hypervisor flag in /proc/cpuinfo, CPUID hypervisor leaf KVM"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_fake_laptop_reads_as_bare_metal_with_smt() {
        let dir = root("metal", &[("proc/cpuinfo", CPUINFO_METAL)]);
        let hw = Hardware::read(&dir, None);
        assert_eq!(hw.threads_per_core, Some(2), "siblings / cpu cores");
        assert!(hw.caches.is_empty());
        assert!(hw.virtualization.starts_with("bare metal: "), "{}", hw.virtualization);
        std::fs::remove_dir_all(dir).unwrap();
        let dir = root("empty", &[]);
        let empty = Hardware::read(&dir, None);
        assert_eq!(empty, Hardware { virtualization: "unknown".into(), ..Hardware::default() });
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_hypervisor_is_named_by_whichever_file_names_it() {
        let vm = |signs: Signs<'_>| virtualization(&signs);
        let xen = Signs { hypervisor_type: Some("xen\n"), ..Signs::default() };
        assert_eq!(vm(xen), "VM (Xen): /sys/hypervisor/type xen");
        let qemu = Signs {
            cpuinfo: Some(CPUINFO_VM),
            dmi_vendor: Some("QEMU\n"),
            dmi_product: Some("Standard PC (Q35 + ICH9, 2009)\n"),
            ..Signs::default()
        };
        assert!(vm(qemu).starts_with("VM (QEMU): hypervisor flag"), "{}", vm(qemu));
        let unnamed = Signs { cpuinfo: Some(CPUINFO_VM), ..Signs::default() };
        assert_eq!(vm(unnamed), "VM (hypervisor not named): hypervisor flag in /proc/cpuinfo");
        // ARM has no hypervisor flag: its absence proves nothing.
        assert_eq!(vm(Signs { cpuinfo: Some(CPUINFO_ARM), ..Signs::default() }), "unknown");
        let hyperv = Signs {
            dmi_vendor: Some("Microsoft Corporation"),
            dmi_product: Some("Virtual Machine"),
            ..Signs::default()
        };
        assert!(vm(hyperv).starts_with("VM (Hyper-V): DMI"), "{}", vm(hyperv));
        let metal_dmi = Signs {
            cpuinfo: Some(CPUINFO_METAL),
            dmi_vendor: Some("LENOVO"),
            dmi_product: Some("20L5"),
            ..Signs::default()
        };
        assert!(vm(metal_dmi).starts_with("bare metal"), "{}", vm(metal_dmi));
    }

    /// This machine: whatever it is, the readers do not fail and say something.
    #[test]
    fn this_machine_reads_without_failing() {
        let hw = Hardware::current();
        assert!(!hw.virtualization.is_empty());
        assert!(hw.caches.iter().all(|c| c.size_kib > 0 && c.level >= 1));
    }
}
