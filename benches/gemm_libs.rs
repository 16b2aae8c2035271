//! float32 matrix multiply: tapegrad's kernel (`ops/gemm`, what `matmul` runs) against the
//! libraries it could be replaced by, in one run, on the same buffers: `matrixmultiply`, the `gemm`
//! crate (candle's and faer's) and OpenBLAS (the runtime-dispatched `libscipy_openblas` of the
//! `scipy-openblas32` wheel, loaded with `dlopen`; skipped with a message when it is not found).
//!
//!     pip install scipy-openblas32          # optional, for the OpenBLAS rows
//!     cargo bench --bench gemm_libs          # 1 thread, then all threads
//!     OPENBLAS_LIB=/path/libscipy_openblas.so cargo bench --bench gemm_libs
//!     GEMM_LIBS=tapegrad,matrixmultiply GEMM_LIBS_THREADS_LIST=1 cargo bench --bench gemm_libs
//!
//! `GEMM_LIBS` picks libraries (tapegrad, matrixmultiply, gemm, openblas), `GEMM_LIBS_THREADS_LIST`
//! the thread counts (default: 1 and all), `GEMM_LIBS_SHAPES` shapes (comma-separated parts of
//! their labels, e.g. `GEMM_LIBS_SHAPES=h.T@g,4096^3`). OpenBLAS picks its kernel by CPU model at load time and
//! prints its choice (`OPENBLAS_CORETYPE=SkylakeX` forces the AVX-512 one where it does not know the
//! CPU: the 2-core Zen 5 EPYC of docs/performance.md gets `Haswell`, AVX2, by default).
//!
//! Each shape runs every library in turn, each for a block of rounds after a pause (not interleaved
//! round by round: OpenBLAS's threads keep spinning for about 0.1 s after a call, which would take a
//! core from whichever library came next), and the table gives each one's best round as GFLOP/s
//! and as a fraction of the FMA roof measured in the same process with the same number of threads
//! (`tapegrad::roof`).
//! Each thread count runs in its own child process, because `matrixmultiply` reads its thread count
//! (`MATMUL_NUM_THREADS`) once per process.

use std::ffi::{c_char, c_int, c_void, CString};
use std::process::Command;
use std::time::{Duration, Instant};

/// (label, m, k, n, A transposed, B transposed): `A` transposed means stored k×m and read through
/// swapped strides, as a `.t()` view in backward.
const SHAPES: &[(&str, usize, usize, usize, bool, bool)] = &[
    ("4096^3", 4096, 4096, 4096, false, false),
    // 4096³'s sweep with one block of columns of `B` (each row of `A` read once) and with 512
    // rows of `A` (an `A` that stays in L3): what the two-thread big-shape path loses where
    // (docs/performance.md, "What limits 4096³ on two threads").
    ("4096x4096x512", 4096, 4096, 512, false, false),
    ("512x4096x4096", 512, 4096, 4096, false, false),
    ("256^3 (W6)", 256, 256, 256, false, false),
    ("W1 x@w1", 64, 1000, 100, false, false),
    ("W1 x.T@g", 1000, 64, 100, true, false),
    ("W1 g@w1.T", 64, 100, 1000, false, true),
    ("W4 256x1024x4096", 256, 1024, 4096, false, false),
    ("W4 256x4096x4096", 256, 4096, 4096, false, false),
    ("W4 h.T@g 4096x256x4096", 4096, 256, 4096, true, false),
    ("W4 g@w.T 256x4096x4096", 256, 4096, 4096, false, true),
    // The rest of W4's products (forward of the last layer, the other weight gradients and input
    // gradients) and W8's forward (`nn.Linear`: `x @ W.t()`).
    ("W4 256x4096x1024", 256, 4096, 1024, false, false),
    ("W4 h.T@g 1024x256x4096", 1024, 256, 4096, true, false),
    ("W4 h.T@g 4096x256x1024", 4096, 256, 1024, true, false),
    ("W4 g@w.T 256x1024x4096", 256, 1024, 4096, false, true),
    ("W8 x@W.T 256x4096x1024", 256, 4096, 1024, false, true),
];

/// Seconds of measurement per library and shape (at least 3 rounds).
const BUDGET: f64 = 0.4;

type CblasSgemm = unsafe extern "C" fn(
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    f32,
    *const f32,
    c_int,
    *const f32,
    c_int,
    f32,
    *mut f32,
    c_int,
);
type SetThreads = unsafe extern "C" fn(c_int);

extern "C" {
    fn dlopen(filename: *const c_char, flag: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
}

struct OpenBlas {
    sgemm: CblasSgemm,
    set_threads: SetThreads,
    corename: Option<unsafe extern "C" fn() -> *const c_char>,
}

fn openblas_path() -> Option<String> {
    if let Ok(p) = std::env::var("OPENBLAS_LIB") {
        return Some(p);
    }
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let out = Command::new(python)
        .args([
            "-c",
            "import scipy_openblas32 as s, os; print(os.path.join(s.get_lib_dir(), 'lib' + s.get_library() + '.so'))",
        ])
        .output()
        .ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn load_openblas() -> Option<OpenBlas> {
    let path = openblas_path()?;
    let c = CString::new(path.clone()).ok()?;
    // SAFETY: a NUL-terminated path; RTLD_NOW (2).
    let h = unsafe { dlopen(c.as_ptr(), 2) };
    if h.is_null() {
        eprintln!("OpenBLAS: cannot dlopen {path}");
        return None;
    }
    let sym = |name: &str| {
        let n = CString::new(name).unwrap();
        // SAFETY: `h` is a live handle and `n` NUL-terminated.
        let p = unsafe { dlsym(h, n.as_ptr()) };
        (!p.is_null()).then_some(p)
    };
    let (s, t) = (sym("scipy_cblas_sgemm")?, sym("scipy_openblas_set_num_threads")?);
    let core = sym("scipy_openblas_get_corename");
    // SAFETY: the symbols of libscipy_openblas with these C signatures (cblas.h with 32-bit ints).
    unsafe {
        Some(OpenBlas {
            sgemm: std::mem::transmute::<*mut c_void, CblasSgemm>(s),
            set_threads: std::mem::transmute::<*mut c_void, SetThreads>(t),
            corename: core.map(|p| std::mem::transmute::<*mut c_void, unsafe extern "C" fn() -> *const c_char>(p)),
        })
    }
}

struct Operands {
    m: usize,
    k: usize,
    n: usize,
    ta: bool,
    tb: bool,
    a: Vec<f32>,
    b: Vec<f32>,
    c: Vec<f32>,
}

impl Operands {
    fn new(m: usize, k: usize, n: usize, ta: bool, tb: bool) -> Self {
        let a = (0..m * k).map(|i| ((i * 7919) % 23) as f32 / 11.0 - 1.0).collect();
        let b = (0..k * n).map(|i| ((i * 104_729) % 19) as f32 / 9.0 - 1.0).collect();
        Operands { m, k, n, ta, tb, a, b, c: vec![0.0; m * n] }
    }
    /// (rsa, csa, rsb, csb)
    fn strides(&self) -> (isize, isize, isize, isize) {
        let (m, k, n) = (self.m as isize, self.k as isize, self.n as isize);
        let (rsa, csa) = if self.ta { (1, m) } else { (k, 1) };
        let (rsb, csb) = if self.tb { (1, k) } else { (n, 1) };
        (rsa, csa, rsb, csb)
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Lib {
    Tapegrad,
    MatrixMultiply,
    GemmCrate,
    OpenBlas,
}

impl Lib {
    fn name(self) -> &'static str {
        match self {
            Lib::Tapegrad => "tapegrad (ops/gemm)",
            Lib::MatrixMultiply => "matrixmultiply",
            Lib::GemmCrate => "gemm crate",
            Lib::OpenBlas => "OpenBLAS",
        }
    }
}

fn run(lib: Lib, o: &mut Operands, threads: usize, blas: Option<&OpenBlas>) {
    let (m, k, n) = (o.m, o.k, o.n);
    let (rsa, csa, rsb, csb) = o.strides();
    let (a, b, c) = (o.a.as_ptr(), o.b.as_ptr(), o.c.as_mut_ptr());
    match lib {
        // SAFETY (all arms): `a`, `b`, `c` are vectors of exactly the sizes these shapes and
        // strides reach, `c` is separate from both.
        // (Threads: the global rayon pool, which the parent sized with RAYON_NUM_THREADS.)
        Lib::Tapegrad => unsafe { tapegrad::roof::sgemm_for_bench(m, k, n, a, rsa, csa, b, rsb, csb, c, n) },
        Lib::MatrixMultiply => unsafe {
            matrixmultiply::sgemm(m, k, n, 1.0, a, rsa, csa, b, rsb, csb, 0.0, c, n as isize, 1)
        },
        Lib::GemmCrate => {
            let par = if threads > 1 { gemm::Parallelism::Rayon(threads) } else { gemm::Parallelism::None };
            unsafe {
                gemm::gemm(
                    m, n, k, c, 1, n as isize, false, a, csa, rsa, b, csb, rsb, 0.0f32, 1.0f32, false, false, false,
                    par,
                )
            }
        }
        Lib::OpenBlas => {
            let blas = blas.expect("OpenBLAS loaded");
            let (ta, lda) = if o.ta { (112, m) } else { (111, k) };
            let (tb, ldb) = if o.tb { (112, k) } else { (111, n) };
            unsafe {
                (blas.sgemm)(
                    101,
                    ta,
                    tb,
                    m as c_int,
                    n as c_int,
                    k as c_int,
                    1.0,
                    a,
                    lda as c_int,
                    b,
                    ldb as c_int,
                    0.0,
                    c,
                    n as c_int,
                )
            }
        }
    }
}

/// The largest relative difference of `c` from an f64 product over a sample of entries.
fn check(o: &Operands) -> f64 {
    let (rsa, csa, rsb, csb) = o.strides();
    let mut worst = 0.0f64;
    for s in 0..64 {
        let (i, j) = ((s * 7919) % o.m, (s * 104_729) % o.n);
        let want: f64 = (0..o.k)
            .map(|p| {
                o.a[(i as isize * rsa + p as isize * csa) as usize] as f64
                    * o.b[(p as isize * rsb + j as isize * csb) as usize] as f64
            })
            .sum();
        worst = worst.max((o.c[i * o.n + j] as f64 - want).abs() / (1.0 + want.abs()));
    }
    worst
}

fn child(threads: usize) {
    let blas = load_openblas();
    if let Some(b) = &blas {
        // SAFETY: a plain setter of the library's thread count.
        unsafe { (b.set_threads)(threads as c_int) };
        if let Some(name) = b.corename {
            // SAFETY: the library returns a static NUL-terminated string.
            let core = unsafe { std::ffi::CStr::from_ptr(name()) };
            println!("OpenBLAS kernel chosen for this CPU: {}", core.to_string_lossy());
        }
    } else {
        eprintln!("OpenBLAS not found (pip install scipy-openblas32, or set OPENBLAS_LIB): its rows are skipped");
    }
    let isa =
        if tapegrad::roof::Isa::Avx512.available() { tapegrad::roof::Isa::Avx512 } else { tapegrad::roof::Isa::Avx2 };
    let roof = tapegrad::roof::fma_roof(isa, threads, 0.3).unwrap_or(f64::NAN);
    println!("\n{threads} thread(s); FMA roof ({isa:?}, {threads} thread(s), measured now): {roof:.1} GFLOP/s");
    println!("{:26} {:22} {:>10} {:>8} {:>10}", "shape (m x k x n)", "library", "GFLOP/s", "of roof", "max err");
    let mut libs = vec![Lib::Tapegrad, Lib::MatrixMultiply, Lib::GemmCrate];
    if blas.is_some() {
        libs.push(Lib::OpenBlas);
    }
    if let Ok(pick) = std::env::var("GEMM_LIBS") {
        let names: Vec<&str> = pick.split(',').map(str::trim).collect();
        libs.retain(|l| {
            let key = match l {
                Lib::Tapegrad => "tapegrad",
                Lib::MatrixMultiply => "matrixmultiply",
                Lib::GemmCrate => "gemm",
                Lib::OpenBlas => "openblas",
            };
            names.contains(&key)
        });
    }
    let only = std::env::var("GEMM_LIBS_SHAPES").ok();
    for &(label, m, k, n, ta, tb) in SHAPES {
        if only.as_deref().is_some_and(|o| !o.split(',').any(|w| label.contains(w.trim()))) {
            continue;
        }
        let mut o = Operands::new(m, k, n, ta, tb);
        let flop = 2.0 * (m * k * n) as f64;
        let mut best = vec![Duration::MAX; libs.len()];
        let mut errs = vec![0.0f64; libs.len()];
        for (i, &lib) in libs.iter().enumerate() {
            o.c.fill(f32::NAN);
            run(lib, &mut o, threads, blas.as_ref()); // warm-up, and the check
            errs[i] = check(&o);
        }
        // Each library's rounds in a block of their own, after a pause: OpenBLAS's threads spin
        // for a long while after a call (`OPENBLAS_THREAD_TIMEOUT`, about 0.1 s by default), and
        // on two cores a library timed in that window gets one core less (interleaved rounds
        // took tapegrad's two-thread 256³ from 509 to 165 GFLOP/s, 2026-11-24).
        for (i, &lib) in libs.iter().enumerate() {
            std::thread::sleep(Duration::from_millis(300));
            let start = Instant::now();
            let mut rounds = 0;
            while rounds < 3 || start.elapsed().as_secs_f64() < BUDGET {
                let t0 = Instant::now();
                run(lib, &mut o, threads, blas.as_ref());
                best[i] = best[i].min(t0.elapsed());
                rounds += 1;
                if rounds >= 200 {
                    break;
                }
            }
        }
        let fastest = best.iter().min().copied().unwrap_or(Duration::MAX);
        let shape = format!("{label} {}{}", if ta { "T" } else { "N" }, if tb { "T" } else { "N" });
        for (i, &lib) in libs.iter().enumerate() {
            let gf = flop / best[i].as_secs_f64() / 1e9;
            let mark = if best[i] == fastest { " *" } else { "" };
            println!("{shape:26} {:22} {gf:10.1} {:7.0}% {:10.1e}{mark}", lib.name(), 100.0 * gf / roof, errs[i]);
        }
    }
}

fn main() {
    if let Ok(t) = std::env::var("GEMM_LIBS_THREADS") {
        child(t.parse().expect("GEMM_LIBS_THREADS is a number"));
        return;
    }
    let all = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    println!("float32 GEMM libraries, one run ('*' marks the fastest per shape; best round of each)");
    let mut counts = vec![1];
    if all > 1 {
        counts.push(all);
    }
    if let Ok(list) = std::env::var("GEMM_LIBS_THREADS_LIST") {
        counts = list.split(',').filter_map(|t| t.trim().parse().ok()).collect();
    }
    for t in counts {
        let exe = std::env::current_exe().expect("own path");
        let status = Command::new(exe)
            .env("GEMM_LIBS_THREADS", t.to_string())
            .env("MATMUL_NUM_THREADS", t.to_string())
            .env("RAYON_NUM_THREADS", t.to_string())
            .env("OPENBLAS_NUM_THREADS", t.to_string())
            .status()
            .expect("run the child");
        if !status.success() {
            eprintln!("the {t}-thread run failed");
        }
    }
}
