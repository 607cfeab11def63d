//! CPU cost of the streaming write path (run with `--release -- --ignored --nocapture`).

mod common;
use common::*;
use xenlet_fs::FileSystem;

#[test]
#[ignore = "benchmark: cargo test --release -p xenlet-fs --test ext_stream_bench -- --ignored --nocapture"]
fn stream_cpu_cost() {
    let (_t, _img, mut fs, ino) = stream_fs("stream-bench");
    let chunk = vec![0u8; 16 << 10];
    let t0 = std::time::Instant::now();
    for i in 0..131072u64 {
        fs.write(ino, i * chunk.len() as u64, &chunk).unwrap();
    }
    fs.unmount().unwrap();
    let dt = t0.elapsed();
    eprintln!(
        "2 GiB in {dt:?}: {:.0} MiB/s of filesystem CPU",
        2048.0 / dt.as_secs_f64()
    );
}
