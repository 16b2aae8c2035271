//! The global allocator's large-block path (NOTE [Large-block cache] in src/alloc.rs): blocks
//! handed between threads keep their values, zeroed requests are zero even from the cache, and
//! growth across the large threshold keeps the contents; small blocks (NOTE [Small-block cache]) keep
//! theirs through reuse, resizing and zeroing.
//!
//! With the `python` feature the library installs the same allocator itself, so this file then has
//! nothing to install and is left out (a second `#[global_allocator]` would not link).
#![cfg(not(feature = "python"))]

use std::sync::Mutex;
use std::thread;

const MIB: usize = 1 << 20;

/// The library sets it only in the extension module (feature `python`).
#[global_allocator]
static GLOBAL: tapegrad::alloc::TapegradAlloc = tapegrad::alloc::TapegradAlloc;

/// The tests of this file run one at a time: the cache is the process's, and one test reads its
/// byte counts.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn threads_allocating_and_freeing_large_blocks_keep_their_values() {
    let _serial = serial();
    let handles: Vec<_> = (0..8u8)
        .map(|k| {
            thread::spawn(move || {
                for i in 0..200usize {
                    // 1, 3 and 4 MiB (huge-page and plain mappings), the same sizes in every
                    // thread so that the cache hands blocks from one thread to another.
                    let len = [MIB, 3 * MIB, 4 * MIB][(i + k as usize) % 3] + 8 * (i % 2);
                    let fill = k.wrapping_mul(31).wrapping_add(i as u8);
                    let v = vec![fill; len];
                    let w: Vec<u8> = v.iter().map(|x| x ^ 0x5a).collect();
                    thread::yield_now();
                    assert!(v.iter().all(|&x| x == fill), "thread {k} step {i}: a block changed under its owner");
                    assert!(w.iter().all(|&x| x == fill ^ 0x5a), "thread {k} step {i}");
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("a worker panicked");
    }
}

#[test]
fn zeroed_requests_are_zero_even_when_the_block_is_reused() {
    let _serial = serial();
    for round in 0..6u8 {
        let z = vec![0u32; MIB]; // 4 MiB through alloc_zeroed
        assert!(z.iter().all(|&x| x == 0), "round {round}: a reused block was handed out dirty");
        drop(z);
        let dirty = vec![round.wrapping_add(1); 4 * MIB];
        assert_eq!(dirty[4 * MIB - 1], round.wrapping_add(1));
    }
}

#[test]
fn growing_and_shrinking_across_the_threshold_keeps_the_contents() {
    let _serial = serial();
    let mut v: Vec<u32> = Vec::new();
    for i in 0..(3 * MIB) as u32 {
        v.push(i); // reallocations from small blocks into large ones and between large sizes
    }
    assert!(v.iter().enumerate().all(|(i, &x)| x == i as u32));
    v.truncate(1000);
    v.shrink_to_fit(); // large to small
    assert!(v.iter().enumerate().all(|(i, &x)| x == i as u32));
    let mut w: Vec<u8> = Vec::with_capacity(MIB + 100);
    w.extend((0..MIB + 100).map(|i| i as u8));
    w.shrink_to(MIB + 10); // the same page-rounded length: stays in place
    assert!(w.iter().enumerate().all(|(i, &x)| x == i as u8));
}

#[test]
fn a_released_cache_holds_nothing() {
    let _serial = serial();
    // Three rounds of the same size make it recur (rule 1), so the last free is cached.
    for _ in 0..4 {
        drop(vec![1u8; 5 * MIB + 12_345]);
    }
    let (cached, _) = tapegrad::alloc::cached_and_mapped();
    assert!(cached >= 5 * MIB, "the recurring size was not cached: {cached} bytes");
    assert_eq!(tapegrad::alloc::release_cached(), cached);
    assert_eq!(tapegrad::alloc::cached_and_mapped().0, 0);
}

#[test]
fn small_blocks_freed_on_other_threads_and_at_thread_exit_keep_their_values() {
    let _serial = serial();
    use std::sync::mpsc;
    // Each thread makes blocks of every small size, checks them, and sends half to the next
    // thread to be freed there; threads exit with full per-thread lists.
    for _round in 0..3 {
        let (txs, rxs): (Vec<_>, Vec<_>) = (0..4).map(|_| mpsc::channel::<Vec<Vec<u8>>>()).unzip();
        let mut rxs: Vec<_> = rxs.into_iter().map(Some).collect();
        let handles: Vec<_> = (0..4usize)
            .map(|k| {
                let tx = txs[(k + 1) % 4].clone();
                let rx = rxs[k].take().expect("one receiver per thread");
                thread::spawn(move || {
                    let mut sent = Vec::new();
                    for i in 0..2000usize {
                        let len = 1 + (i * 7 + k) % 300;
                        let fill = (i + k) as u8;
                        let v = vec![fill; len];
                        let mut w = v.clone();
                        w.push(fill); // a reallocation, often within the class
                        assert!(v.iter().chain(w.iter()).all(|&x| x == fill), "thread {k} block {i}");
                        if i % 2 == 0 {
                            sent.push(v);
                        }
                    }
                    tx.send(sent).expect("the next thread is alive");
                    let got = rx.recv().expect("the previous thread sends");
                    for v in &got {
                        let fill = v[0];
                        assert!(v.iter().all(|&x| x == fill), "a block changed on its way between threads");
                    }
                    drop(got); // freed on this thread, allocated on another
                })
            })
            .collect();
        drop(txs);
        for h in handles {
            h.join().expect("a worker panicked");
        }
    }
}

/// NOTE [Small-block cache]: blocks of up to 1 KiB are kept per thread when freed and handed out
/// again for any request of their 16-byte class; growing one byte at a time crosses every class
/// boundary (a fresh block and a copy), and within a class stays in place.
#[test]
fn small_blocks_reused_resized_and_zeroed_keep_their_contents() {
    let _serial = serial();
    for round in 0..3u8 {
        // A graph's worth of small blocks of every class, filled, freed, and requested again.
        let blocks: Vec<Vec<u8>> = (1..=1024usize).map(|n| vec![round ^ (n as u8); n]).collect();
        for (k, b) in blocks.iter().enumerate() {
            assert!(b.iter().all(|&x| x == round ^ ((k + 1) as u8)), "round {round} block {k}");
        }
        drop(blocks);
        // Zeroed requests are zero even when their block comes back from a list of dirty ones.
        let zeroed: Vec<Vec<u64>> = (1..=128usize).map(|n| vec![0u64; n]).collect();
        assert!(zeroed.iter().all(|v| v.iter().all(|&x| x == 0)), "round {round}: a zeroed block was dirty");
    }
    let mut v: Vec<u8> = Vec::new();
    for i in 0..3000usize {
        v.push(i as u8); // small classes one after the other, then the system's blocks
        if i % 97 == 0 {
            v.shrink_to_fit(); // exact sizes: a reallocation at nearly every step
        }
    }
    assert!(v.iter().enumerate().all(|(i, &x)| x == i as u8));
    v.truncate(17);
    v.shrink_to_fit(); // from the system's blocks back to a small class
    assert!(v.iter().enumerate().all(|(i, &x)| x == i as u8));
    let mut aligned: Vec<u128> = vec![7; 3]; // 16-byte alignment: still a small class
    aligned.extend([9u128; 50]);
    assert_eq!(aligned.iter().sum::<u128>(), 7 * 3 + 9 * 50);
}
