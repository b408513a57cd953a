//! The Python module `dedup_hbase_core`. Use it through `dedup_hbase/native.py`, which
//! checks the Unicode version and the patterns and falls back to the reference.

use crate::{
    boilerplate, jieba_terms::JiebaTerms, mmh3, normalize, thrift, unicode, Featurize, Shingles,
    Status, Works,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

/// The texts of a list: `None` for a text with a lone surrogate (not UTF-8);
/// TypeError, as `Fingerprinter.fingerprint` raises, for an item that is not a str.
fn texts_of<'a>(items: &'a [Bound<'a, PyAny>]) -> PyResult<Vec<Option<&'a str>>> {
    items
        .iter()
        .map(|item| {
            let s = item.cast::<PyString>().map_err(|_| {
                PyTypeError::new_err(format!(
                    "text must be a str, not {}",
                    item.get_type()
                        .name()
                        .map(|n| n.to_string())
                        .unwrap_or_default()
                ))
            })?;
            Ok(s.to_str().ok())
        })
        .collect()
}

fn features_dict<'py>(
    py: Python<'py>,
    features: Vec<(String, i64)>,
) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for (term, weight) in features {
        dict.set_item(term, weight)?;
    }
    Ok(dict)
}

fn batch<'py, F: Featurize>(
    py: Python<'py>,
    featurizer: &F,
    works: &Works<F::Work>,
    texts: &Bound<'py, PyList>,
    seed: u32,
    threads: usize,
    keep_below: u32,
) -> PyResult<Batch<'py>> {
    let items: Vec<Bound<'py, PyAny>> = texts.iter().collect();
    let strs = texts_of(&items)?;
    let (hashes, status, bodies, kept) =
        py.detach(|| crate::fingerprint_bodies(featurizer, &strs, seed, threads, keep_below, works));
    let bytes: Vec<u8> = hashes.iter().flat_map(|h| h.to_le_bytes()).collect();
    let chars: Vec<u8> = bodies.iter().flat_map(|n| n.to_le_bytes()).collect();
    Ok((
        PyBytes::new(py, &bytes),
        PyBytes::new(py, &status),
        PyBytes::new(py, &chars),
        kept,
    ))
}

/// A batch's fingerprints (8 little-endian bytes a text), statuses (one byte a text),
/// bodies' characters without white space (4 little-endian bytes a text, 2^32 - 1 unknown)
/// and the bodies of fewer characters than `keep_below` (None for the others)
type Batch<'py> = (Bound<'py, PyBytes>, Bound<'py, PyBytes>, Bound<'py, PyBytes>, Vec<Option<String>>);

/// The bytes of any object with the buffer protocol (`bytes`, a pyarrow `Buffer`, a
/// memoryview), held for as long as this lives: no copy.
struct Bytes(Box<pyo3::ffi::Py_buffer>);

impl Bytes {
    fn of(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Self> {
        let mut view = Box::new(std::mem::MaybeUninit::<pyo3::ffi::Py_buffer>::zeroed());
        // SAFETY: a zeroed Py_buffer filled by CPython; released in Drop, under the GIL
        let filled = unsafe {
            pyo3::ffi::PyObject_GetBuffer(obj.as_ptr(), view.as_mut_ptr(), pyo3::ffi::PyBUF_SIMPLE)
        };
        if filled != 0 {
            PyErr::take(obj.py());
            return Err(PyTypeError::new_err(format!(
                "{what} must be a buffer (bytes, a pyarrow Buffer), not {}",
                obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
            )));
        }
        // SAFETY: PyObject_GetBuffer succeeded, so the view is initialised
        Ok(Bytes(unsafe { Box::from_raw(Box::into_raw(view).cast()) }))
    }

    fn slice(&self) -> &[u8] {
        if self.0.len <= 0 || self.0.buf.is_null() {
            return &[];
        }
        // SAFETY: a PyBUF_SIMPLE view is `len` contiguous bytes at `buf`, alive while held
        unsafe { std::slice::from_raw_parts(self.0.buf as *const u8, self.0.len as usize) }
    }
}

impl Drop for Bytes {
    fn drop(&mut self) {
        // SAFETY: the view was filled by PyObject_GetBuffer; the GIL is held where a Bytes
        // is dropped (every one lives in a #[pymethods] call's frame)
        unsafe { pyo3::ffi::PyBuffer_Release(&mut *self.0) }
    }
}

/// `(fingerprints, statuses)` of an Arrow string array from its buffers (`crate::arrow_texts`):
/// status 4 a null, 5 a value that is not UTF-8; ValueError for buffers that do not fit.
#[allow(clippy::too_many_arguments)]
fn arrow<'py, F: Featurize>(
    py: Python<'py>,
    featurizer: &F,
    works: &Works<F::Work>,
    offsets: &Bound<'py, PyAny>,
    data: &Bound<'py, PyAny>,
    width: usize,
    offset: usize,
    length: usize,
    validity: Option<&Bound<'py, PyAny>>,
    seed: u32,
    threads: usize,
) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
    let offsets = Bytes::of(offsets, "offsets")?;
    let data = Bytes::of(data, "data")?;
    let validity = validity.map(|v| Bytes::of(v, "validity")).transpose()?;
    let (offsets_, data_) = (offsets.slice(), data.slice());
    let bits = validity.as_ref().map(|v| v.slice());
    let (hashes, status) = py.detach(|| {
        let (texts, reasons) = crate::arrow_texts(offsets_, data_, width, offset, length, bits)?;
        Ok::<_, String>(crate::fingerprint_arrow(featurizer, &texts, &reasons, seed, threads, works))
    })
    .map_err(PyValueError::new_err)?;
    let bytes: Vec<u8> = hashes.iter().flat_map(|h| h.to_le_bytes()).collect();
    Ok((PyBytes::new(py, &bytes), PyBytes::new(py, &status)))
}

fn single<F: Featurize>(
    py: Python<'_>,
    featurizer: &F,
    works: &Works<F::Work>,
    text: &Bound<'_, PyAny>,
    seed: u32,
) -> PyResult<(u64, u8)> {
    let item = [text.clone()];
    let strs = texts_of(&item)?;
    let text = strs[0];
    Ok(py.detach(|| match text {
        None => (0, Status::Surrogate as u8),
        Some(text) => match works.with(|work| crate::fingerprint(featurizer, text, seed, work)) {
            Ok(h) => (h, 0),
            Err(s) => (0, s as u8),
        },
    }))
}

/// `(margins, status)`: 64 margins, bit 63 first (empty unless status is 0; statuses as
/// `fingerprint`'s)
fn margins_of<F: Featurize>(
    py: Python<'_>,
    featurizer: &F,
    works: &Works<F::Work>,
    text: &Bound<'_, PyAny>,
    seed: u32,
) -> PyResult<(Vec<i64>, u8)> {
    let item = [text.clone()];
    let strs = texts_of(&item)?;
    let text = strs[0];
    Ok(py.detach(|| match text {
        None => (Vec::new(), Status::Surrogate as u8),
        Some(text) => match works.with(|work| crate::margins(featurizer, text, seed, work)) {
            Ok(m) => (m.to_vec(), 0),
            Err(s) => (Vec::new(), s as u8),
        },
    }))
}

fn str_arg(text: &Bound<'_, PyAny>) -> PyResult<String> {
    let s = text
        .cast::<PyString>()
        .map_err(|_| PyTypeError::new_err("text must be a str"))?;
    Ok(s.to_str()
        .map_err(|_| PyValueError::new_err("a text with a lone surrogate cannot enter the core"))?
        .to_owned())
}

/// The jieba featurizer (version 2): `Jieba(dict_path, idf_path, stop_words)`.
#[pyclass(frozen, module = "dedup_hbase_core")]
struct Jieba(JiebaTerms, Works<<JiebaTerms as Featurize>::Work>);

#[pymethods]
impl Jieba {
    #[new]
    fn new(
        py: Python<'_>,
        dict_path: String,
        idf_path: String,
        stop_words: Vec<String>,
    ) -> PyResult<Self> {
        py.detach(|| {
            let dict = std::fs::read(&dict_path).map_err(|e| format!("{dict_path}: {e}"))?;
            let idf = std::fs::read_to_string(&idf_path).map_err(|e| format!("{idf_path}: {e}"))?;
            // the rules' regexes compile while the tables load
            std::thread::scope(|scope| {
                let rules = scope.spawn(boilerplate::warm_up);
                let terms = JiebaTerms::new(dict, idf, stop_words);
                rules.join().expect("compiling the rules panicked");
                terms
            })
        })
        .map(|terms| Jieba(terms, Works::default()))
        .map_err(PyValueError::new_err)
    }

    /// `JiebaFeaturizer.features(text)`
    fn features<'py>(
        &self,
        py: Python<'py>,
        text: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let text = str_arg(text)?;
        let features = py.detach(|| Featurize::features(&self.0, &text));
        features_dict(py, features)
    }

    /// `JiebaFeaturizer.words(text)`: jieba's tokens, HMM off
    fn words(&self, text: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
        let text = str_arg(text)?;
        let mut out = Vec::new();
        self.0.words(&text, &mut out);
        Ok(out.into_iter().map(str::to_owned).collect())
    }

    /// `(simhash, status)`: status 0 ok, 1 empty text, 2 no features, 3 lone surrogate
    fn fingerprint(
        &self,
        py: Python<'_>,
        text: &Bound<'_, PyAny>,
        seed: u32,
    ) -> PyResult<(u64, u8)> {
        single(py, &self.0, &self.1, text, seed)
    }

    /// `(margins, status)`: `Fingerprinter.margins`, bit 63 first
    fn margins(
        &self,
        py: Python<'_>,
        text: &Bound<'_, PyAny>,
        seed: u32,
    ) -> PyResult<(Vec<i64>, u8)> {
        margins_of(py, &self.0, &self.1, text, seed)
    }

    /// `(fingerprints, statuses, bodies, kept)`: 8 little-endian bytes, one status byte and 4
    /// little-endian bytes (the body's characters without white space) a text, and the body
    /// of each text of fewer such characters than `keep_below` (else None)
    #[pyo3(signature = (texts, seed, threads=1, keep_below=0))]
    fn fingerprint_batch<'py>(
        &self,
        py: Python<'py>,
        texts: &Bound<'py, PyList>,
        seed: u32,
        threads: usize,
        keep_below: u32,
    ) -> PyResult<Batch<'py>> {
        batch(py, &self.0, &self.1, texts, seed, threads, keep_below)
    }

    /// `(fingerprints, statuses)` of an Arrow `string` (`width` 4) or `large_string` (8)
    /// array's buffers, `length` values from value `offset` on; status 4 null, 5 not UTF-8
    #[pyo3(signature = (offsets, data, width, offset, length, validity, seed, threads=1))]
    #[allow(clippy::too_many_arguments)]
    fn fingerprint_arrow<'py>(
        &self,
        py: Python<'py>,
        offsets: &Bound<'py, PyAny>,
        data: &Bound<'py, PyAny>,
        width: usize,
        offset: usize,
        length: usize,
        validity: Option<&Bound<'py, PyAny>>,
        seed: u32,
        threads: usize,
    ) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
        arrow(py, &self.0, &self.1, offsets, data, width, offset, length, validity, seed, threads)
    }

    /// `({word: idf in thousandths}, median)` as the core read them
    fn idf_table<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyDict>, i64)> {
        let (table, median) = self.0.idf_table();
        let dict = PyDict::new(py);
        for (word, value) in table {
            dict.set_item(word, value)?;
        }
        Ok((dict, median))
    }
}

/// The shingle featurizer (version 1): `Shingles(n)`.
#[pyclass(frozen, name = "Shingles", module = "dedup_hbase_core")]
struct ShingleCore(Shingles, Works<()>);

#[pymethods]
impl ShingleCore {
    #[new]
    fn new(n: usize) -> PyResult<Self> {
        if !(1..=16).contains(&n) {
            return Err(PyValueError::new_err(format!(
                "shingle size must be between 1 and 16, not {n}"
            )));
        }
        Ok(ShingleCore(Shingles(n), Works::default()))
    }

    fn features<'py>(
        &self,
        py: Python<'py>,
        text: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let text = str_arg(text)?;
        let features = py.detach(|| Featurize::features(&self.0, &text));
        features_dict(py, features)
    }

    fn fingerprint(
        &self,
        py: Python<'_>,
        text: &Bound<'_, PyAny>,
        seed: u32,
    ) -> PyResult<(u64, u8)> {
        single(py, &self.0, &self.1, text, seed)
    }

    fn margins(
        &self,
        py: Python<'_>,
        text: &Bound<'_, PyAny>,
        seed: u32,
    ) -> PyResult<(Vec<i64>, u8)> {
        margins_of(py, &self.0, &self.1, text, seed)
    }

    #[pyo3(signature = (texts, seed, threads=1, keep_below=0))]
    fn fingerprint_batch<'py>(
        &self,
        py: Python<'py>,
        texts: &Bound<'py, PyList>,
        seed: u32,
        threads: usize,
        keep_below: u32,
    ) -> PyResult<Batch<'py>> {
        batch(py, &self.0, &self.1, texts, seed, threads, keep_below)
    }

    /// `(fingerprints, statuses)` of an Arrow `string` (`width` 4) or `large_string` (8)
    /// array's buffers, `length` values from value `offset` on; status 4 null, 5 not UTF-8
    #[pyo3(signature = (offsets, data, width, offset, length, validity, seed, threads=1))]
    #[allow(clippy::too_many_arguments)]
    fn fingerprint_arrow<'py>(
        &self,
        py: Python<'py>,
        offsets: &Bound<'py, PyAny>,
        data: &Bound<'py, PyAny>,
        width: usize,
        offset: usize,
        length: usize,
        validity: Option<&Bound<'py, PyAny>>,
        seed: u32,
        threads: usize,
    ) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
        arrow(py, &self.0, &self.1, offsets, data, width, offset, length, validity, seed, threads)
    }
}

/// `features.normalize(text)`
#[pyfunction(name = "normalize")]
fn py_normalize(text: &Bound<'_, PyAny>) -> PyResult<String> {
    Ok(normalize::normalize(&str_arg(text)?))
}

/// `boilerplate.body_text(text)` (of normalised text)
#[pyfunction]
fn body_text(text: &Bound<'_, PyAny>) -> PyResult<String> {
    Ok(boilerplate::body_text(&str_arg(text)?))
}

/// `boilerplate.boilerplate_reason(line)`
#[pyfunction]
fn boilerplate_reason(line: &Bound<'_, PyAny>) -> PyResult<Option<&'static str>> {
    Ok(boilerplate::boilerplate_reason(&str_arg(line)?))
}

/// `mmh3.hash64(data, seed, signed=False)[0]`
#[pyfunction]
fn hash64(data: &[u8], seed: u32) -> u64 {
    mmh3::hash64(data, seed)
}

/// `thrift.reply_length`: the length of the Thrift2 reply message at the start of `buf`, None
/// while it is incomplete; ValueError for bytes that are not a strict binary message.
#[pyfunction]
fn thrift_reply_length(buf: &[u8]) -> PyResult<Option<usize>> {
    thrift::reply_length(buf).map_err(|m| PyValueError::new_err(m.0))
}

/// `thrift.decode_results` of a whole reply: (rows: list of bytes or None, the cells' row
/// indexes as little-endian u32 bytes, qualifiers: list of bytes, values: list of bytes), or
/// None where the reference must decode it.
#[pyfunction]
fn thrift_results<'py>(py: Python<'py>, buf: &[u8]) -> PyResult<Option<Bound<'py, PyTuple>>> {
    let Some(found) = thrift::decode_results(buf) else { return Ok(None) };
    let rows = PyList::new(py, found.rows.iter().map(|r| r.map(|b| PyBytes::new(py, b))))?;
    let cells: Vec<u8> = found.cell_rows.iter().flat_map(|i| i.to_le_bytes()).collect();
    let qualifiers = PyList::new(py, found.qualifiers.iter().map(|b| PyBytes::new(py, b)))?;
    let values = PyList::new(py, found.values.iter().map(|b| PyBytes::new(py, b)))?;
    Ok(Some(PyTuple::new(py, [rows.into_any(), PyBytes::new(py, &cells).into_any(), qualifiers.into_any(),
                              values.into_any()])?))
}

#[pymodule]
fn dedup_hbase_core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("UNIDATA_VERSION", unicode::UNIDATA_VERSION)?;
    m.add("BUILT_FOR_PYTHON", unicode::PYTHON_VERSION)?;
    m.add(
        "PATTERNS",
        boilerplate::PATTERNS
            .iter()
            .copied()
            .collect::<std::collections::HashMap<_, _>>(),
    )?;
    m.add("JIEBA_VERSION", 2)?;
    m.add("SHINGLES_VERSION", 1)?;
    m.add_class::<Jieba>()?;
    m.add_class::<ShingleCore>()?;
    m.add_function(wrap_pyfunction!(py_normalize, m)?)?;
    m.add_function(wrap_pyfunction!(body_text, m)?)?;
    m.add_function(wrap_pyfunction!(boilerplate_reason, m)?)?;
    m.add_function(wrap_pyfunction!(hash64, m)?)?;
    m.add_function(wrap_pyfunction!(thrift_reply_length, m)?)?;
    m.add_function(wrap_pyfunction!(thrift_results, m)?)?;
    Ok(())
}
