//! Generates the Unicode tables from the Python interpreter the core is built for
//! (maturin sets PYO3_PYTHON), so every character property is that interpreter's.
use std::{env, path::PathBuf, process::Command};

fn main() {
    let python = env::var("PYO3_PYTHON")
        .or_else(|_| env::var("PYTHON_SYS_EXECUTABLE"))
        .unwrap_or_else(|_| "python3".to_string());
    let out = PathBuf::from(env::var("OUT_DIR").unwrap()).join("unicode_tables.rs");
    let status = Command::new(&python)
        .arg("gen_tables.py")
        .arg(&out)
        .status()
        .unwrap_or_else(|e| panic!("cannot run {python} gen_tables.py: {e}"));
    assert!(status.success(), "{python} gen_tables.py failed");
    println!("cargo:rerun-if-changed=gen_tables.py");
    println!("cargo:rerun-if-env-changed=PYO3_PYTHON");
}
