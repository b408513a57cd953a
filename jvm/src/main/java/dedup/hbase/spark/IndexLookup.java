package dedup.hbase.spark;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.filter.MultiRowRangeFilter;
import org.apache.hadoop.hbase.util.Bytes;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * The Spark data source {@code dedup-hbase-lookup}: {@code check --engine spark}'s read of the
 * index, in the executors' JVMs with HBase's own client. Each task scans the index rows of its
 * probes' scan prefixes and compares every row once with the queries of its prefix.
 *
 * <p>An index row is segment(4B) + flag(1B) + simhash(8B) with one cell per document (the
 * qualifier is the document id, no value; in an index with sketches, {@code sketched}, the id
 * with each 0x00 byte as 0x00 0xFF, then 0x00 0x00, the document's 8-byte sketch and, for a short
 * text under the short-text rule, its kept text in UTF-8: index/layout.py, text/units.py). A row is one indexed fingerprint, so the copies of one text are one
 * comparison per query however many there are (skew).
 *
 * <p>In: the folder {@code probes}, a file per task ({@code part-*}; hidden names skipped) of
 * lines "QUERY PREFIX" (two signed decimal longs, the prefix being {@code segment << 8 | flag}),
 * sorted by prefix within each file, as the job writes them with {@code dedup-hbase-lines}. A
 * task cuts its file into chunks of about {@code chunk} probes (cut between prefixes) and reads
 * each chunk with one scan: a {@link MultiRowRangeFilter} over the chunk's prefixes, neighbours
 * merged into one range (the scheme has no rows between flag {@code flags} of one segment and
 * flag 1 of the next; 255: never merge across segments).
 *
 * <p>Out ({@link #SCHEMA}): one row per (query, indexed fingerprint within {@code k} bits):
 * query, simhash, distance, total (the documents of the fingerprint), ids (the first
 * {@code limit} in key order, or all when {@code limit} is negative), and when {@code sketched}
 * their sketches and kept texts ("" for all but short texts; else both null). A fingerprint found under several flags of one query comes out once
 * per flag; the caller merges. Nothing here applies a TTL or confirms. Other options: the
 * index's {@code table} and {@code family}, HBase's ZooKeeper ({@code quorum}, {@code port},
 * {@code parent}). This source does not write.
 */
public final class IndexLookup implements TableProvider, DataSourceRegister {
  static final int PREFIX_BYTES = 5;
  static final int KEY_BYTES = 13;
  static final StructType SCHEMA = new StructType().add("query", DataTypes.LongType)
      .add("simhash", DataTypes.LongType).add("distance", DataTypes.IntegerType).add("total", DataTypes.LongType)
      .add("ids", DataTypes.createArrayType(DataTypes.StringType))
      .add("sketches", DataTypes.createArrayType(DataTypes.LongType))
      .add("kepts", DataTypes.createArrayType(DataTypes.StringType));

  static final String NAME = "dedup-hbase-lookup";

  @Override
  public String shortName() {
    return NAME;
  }

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    return SCHEMA;
  }

  @Override
  public org.apache.spark.sql.connector.catalog.Table getTable(StructType schema, Transform[] partitioning,
      Map<String, String> properties) {
    return new Lookup(new Settings(new CaseInsensitiveStringMap(properties)));
  }

  /** The options, checked on the driver. */
  static final class Settings implements Serializable {
    final String probes;
    final String quorum;
    final int port;
    final String parent;
    final String table;
    final byte[] family;
    final int flags;
    final int k;
    final int limit;
    final int chunk;
    final boolean sketched;

    Settings(CaseInsensitiveStringMap o) {
      probes = ReadOnlyTable.required(o, NAME, "probes");
      quorum = ReadOnlyTable.required(o, NAME, "quorum");
      port = Integer.parseInt(ReadOnlyTable.required(o, NAME, "port"));
      parent = o.getOrDefault("parent", "");
      table = ReadOnlyTable.required(o, NAME, "table");
      family = Bytes.toBytes(ReadOnlyTable.required(o, NAME, "family"));
      flags = Integer.parseInt(ReadOnlyTable.required(o, NAME, "flags"));
      k = Integer.parseInt(ReadOnlyTable.required(o, NAME, "k"));
      limit = Integer.parseInt(o.getOrDefault("limit", "-1"));
      chunk = Integer.parseInt(ReadOnlyTable.required(o, NAME, "chunk"));
      sketched = Boolean.parseBoolean(o.getOrDefault("sketched", "false"));
    }
  }

  /** One file of probes. */
  static final class ProbeFile implements InputPartition {
    final String path;

    ProbeFile(String path) {
      this.path = path;
    }
  }

  static final class Lookup extends ReadOnlyTable {
    final Settings settings;

    Lookup(Settings settings) {
      super(NAME, SCHEMA);
      this.settings = settings;
    }

    @Override
    InputPartition[] partitions() {
      return files().toArray(new InputPartition[0]);
    }

    @Override
    PartitionReaderFactory readers() {
      Settings s = settings;
      return partition -> new Reader(((ProbeFile) partition).path, s);
    }

    /** The folder's probe files, by name. */
    List<ProbeFile> files() {
      Configuration conf = SparkContext.getOrCreate().hadoopConfiguration(); // with spark.hadoop.*
      List<ProbeFile> found = new ArrayList<>();
      try {
        Path folder = new Path(settings.probes);
        FileStatus[] listed = folder.getFileSystem(conf).listStatus(folder);
        Arrays.sort(listed);
        for (FileStatus f : listed) {
          String name = f.getPath().getName();
          if (f.isFile() && !name.startsWith("_") && !name.startsWith(".")) {
            found.add(new ProbeFile(f.getPath().toString()));
          }
        }
      } catch (IOException e) {
        throw new IllegalStateException(NAME + ": cannot list the probes in " + settings.probes + ": " + e,
            e);
      }
      return found;
    }
  }

  /** A task: its file's probes read a chunk at a time, each chunk's matches made by one scan. */
  static final class Reader implements PartitionReader<InternalRow> {
    final Settings s;
    final BufferedReader lines;
    final String path;
    long line; // lines read
    long[] held; // the first probe of the next chunk: query, prefix
    Iterator<InternalRow> current = Collections.emptyIterator();
    InternalRow row;
    Connection connection;
    Table index;

    Reader(String path, Settings s) {
      this.s = s;
      this.path = path;
      try {
        Path p = new Path(path);
        FileSystem fs = p.getFileSystem(ExecutorHadoop.conf());
        lines = new BufferedReader(new InputStreamReader(fs.open(p), StandardCharsets.UTF_8), 1 << 16);
      } catch (IOException e) {
        throw new UncheckedIOException(NAME + ": cannot read " + path + ": " + e, e);
      }
    }

    /** The next probe of the file, or null at its end. */
    long[] probe() throws IOException {
      String text = lines.readLine();
      while (text != null && text.isEmpty()) {
        line++;
        text = lines.readLine();
      }
      if (text == null) {
        return null;
      }
      line++;
      int space = text.indexOf(' ');
      try {
        return new long[] {Long.parseLong(text.substring(0, space)), Long.parseLong(text.substring(space + 1))};
      } catch (RuntimeException e) {
        throw new IOException(path + ", line " + line + ": not \"QUERY PREFIX\": " + text);
      }
    }

    @Override
    public boolean next() throws IOException {
      while (!current.hasNext()) {
        long[] first = held != null ? held : probe();
        held = null;
        if (first == null) {
          return false;
        }
        Chunk c = new Chunk();
        c.add(first[0], first[1]);
        for (long[] p = probe(); p != null; p = probe()) {
          if (c.size() >= s.chunk && p[1] != c.lastPrefix()) {
            held = p;
            break;
          }
          c.add(p[0], p[1]);
        }
        if (index == null) { // opened for a file with probes only
          connection = ConnectionFactory.createConnection(BulkLoad.conf(s.quorum, s.port, s.parent));
          index = connection.getTable(TableName.valueOf(s.table));
        }
        List<InternalRow> out = new ArrayList<>();
        c.scan(index, s.family, s.flags, s.k, s.limit, s.sketched, out);
        current = out.iterator();
      }
      row = current.next();
      return true;
    }

    @Override
    public InternalRow get() {
      return row;
    }

    @Override
    public void close() throws IOException {
      lines.close();
      if (index != null) {
        index.close();
        connection.close();
      }
    }
  }

  /** Probes sorted by prefix: their distinct prefixes and, per prefix, its queries. */
  static final class Chunk {
    long[] queries = new long[1024];
    long[] prefixes = new long[1024]; // distinct, ascending
    int[] firsts = new int[1025]; // queries of prefixes[i]: firsts[i] .. firsts[i + 1] - 1
    int probes;
    int distinct;

    int size() {
      return probes;
    }

    long lastPrefix() {
      return prefixes[distinct - 1];
    }

    void add(long query, long prefix) {
      if (distinct == 0 || prefix != prefixes[distinct - 1]) {
        if (distinct > 0 && prefix < prefixes[distinct - 1]) {
          throw new IllegalArgumentException("probes are not sorted by prefix");
        }
        if (distinct == prefixes.length) {
          prefixes = Arrays.copyOf(prefixes, 2 * distinct);
          firsts = Arrays.copyOf(firsts, 2 * distinct + 1);
        }
        prefixes[distinct] = prefix;
        firsts[distinct] = probes;
        distinct++;
      }
      if (probes == queries.length) {
        queries = Arrays.copyOf(queries, 2 * probes);
      }
      queries[probes++] = query;
      firsts[distinct] = probes;
    }

    /** The next prefix in key order that can hold rows: the next flag, or flag 1 of the next segment. */
    static long successor(long prefix, int flags) {
      return (prefix & 0xFF) < flags ? prefix + 1 : (((prefix >>> 8) + 1) << 8) | 1;
    }

    static byte[] key(long prefix) {
      byte[] out = new byte[PREFIX_BYTES];
      for (int i = PREFIX_BYTES - 1; i >= 0; i--) {
        out[i] = (byte) prefix;
        prefix >>>= 8;
      }
      return out;
    }

    /** One scan of the chunk's prefixes; a row's matches appended to {@code out} when the row ends. */
    void scan(Table index, byte[] family, int flags, int k, int limit, boolean sketched, List<InternalRow> out)
        throws IOException {
      if (distinct == 0) {
        return;
      }
      List<MultiRowRangeFilter.RowRange> ranges = new ArrayList<>();
      int i = 0; // a run of prefixes with no possible row between them is one range
      while (i < distinct) {
        int j = i;
        while (j + 1 < distinct && prefixes[j + 1] == successor(prefixes[j], flags)) {
          j++;
        }
        ranges.add(new MultiRowRangeFilter.RowRange(key(prefixes[i]), true, key(prefixes[j] + 1), false));
        i = j + 1;
      }
      // 10,000 rows a call (an index row is mostly one small cell; HBase's 2 MB a call bounds a wide
      // row's): 17% less of the lookup step than 1,000 at 10^6 queries against 10^7 (docs/benchmarks.md)
      Scan scan = new Scan().withStartRow(key(prefixes[0])).withStopRow(key(prefixes[distinct - 1] + 1))
          .addFamily(family).setCaching(10000).setBatch(1000).setCacheBlocks(false);
      if (ranges.size() > 1) {
        scan.setFilter(new MultiRowRangeFilter(ranges));
      }
      RowMatches row = new RowMatches(limit, sketched);
      int at = 0; // the index in prefixes of the current row's prefix
      try (ResultScanner scanner = index.getScanner(scan)) {
        for (Result result : scanner) {
          byte[] key = result.getRow();
          if (key.length != KEY_BYTES) {
            throw new IOException("index row key of " + key.length + " bytes, not " + KEY_BYTES + ": "
                + Bytes.toStringBinary(key));
          }
          if (!row.same(key)) {
            row.emit(out);
            long prefix = Bytes.toLong(key, 0, 8) >>> 24; // the first 5 bytes
            while (at < distinct && prefixes[at] < prefix) {
              at++;
            }
            row.start(key, at < distinct && prefixes[at] == prefix ? at : -1, this, k);
          }
          row.add(result);
        }
      }
      row.emit(out);
    }
  }

  /** The cells of one index row, gathered across the partial results of a wide row. */
  static final class RowMatches {
    final int limit;
    final boolean sketched;
    byte[] key;
    long simhash;
    long[] matched = new long[16]; // the queries within k bits
    int[] distances = new int[16];
    int count;
    long total;
    List<String> ids = new ArrayList<>();
    long[] sketches = new long[16];
    List<String> kepts = new ArrayList<>();

    RowMatches(int limit, boolean sketched) {
      this.limit = limit;
      this.sketched = sketched;
    }

    boolean same(byte[] other) {
      return key != null && Bytes.equals(key, other);
    }

    void start(byte[] rowKey, int prefixAt, Chunk chunk, int k) {
      key = rowKey;
      simhash = Bytes.toLong(rowKey, PREFIX_BYTES);
      count = 0;
      total = 0;
      ids.clear();
      kepts.clear();
      if (prefixAt < 0) {
        return;
      }
      for (int q = chunk.firsts[prefixAt]; q < chunk.firsts[prefixAt + 1]; q++) {
        int distance = Long.bitCount(chunk.queries[q] ^ simhash);
        if (distance <= k) {
          if (count == matched.length) {
            matched = Arrays.copyOf(matched, 2 * count);
            distances = Arrays.copyOf(distances, 2 * count);
          }
          matched[count] = chunk.queries[q];
          distances[count++] = distance;
        }
      }
    }

    void add(Result result) {
      Cell[] cells = result.rawCells();
      total += cells.length;
      if (count == 0) {
        return;
      }
      for (Cell cell : cells) {
        if (limit >= 0 && ids.size() >= limit) {
          break;
        }
        byte[] qualifier = CellUtil.cloneQualifier(cell);
        if (!sketched) {
          ids.add(Bytes.toString(qualifier));
          continue;
        }
        if (ids.size() == sketches.length) {
          sketches = Arrays.copyOf(sketches, 2 * ids.size());
        }
        int end = sketchEnd(qualifier);
        sketches[ids.size()] = Bytes.toLong(qualifier, end + 2);
        kepts.add(Bytes.toString(qualifier, end + 10, qualifier.length - end - 10));
        ids.add(Bytes.toString(unescaped(qualifier, end)));
      }
    }

    /** Where the escaped id of a qualifier with a sketch ends: its first 0x00 0x00. */
    static int sketchEnd(byte[] qualifier) {
      for (int i = 0; i + 1 < qualifier.length; i++) {
        if (qualifier[i] == 0) {
          if (qualifier[i + 1] == 0) {
            return i;
          }
          i++; // an escaped 0x00: 0x00 0xFF
        }
      }
      throw new IllegalArgumentException("an index cell's column without the sketch's 0x00 0x00");
    }

    /** The first {@code length} bytes of a qualifier with each 0x00 0xFF back to 0x00. */
    static byte[] unescaped(byte[] qualifier, int length) {
      int zeros = 0;
      for (int i = 0; i < length; i++) {
        if (qualifier[i] == 0) {
          zeros++;
        }
      }
      if (zeros == 0) {
        return Arrays.copyOf(qualifier, length);
      }
      byte[] out = new byte[length - zeros];
      int j = 0;
      for (int i = 0; i < length; i++) {
        out[j++] = qualifier[i];
        if (qualifier[i] == 0) {
          i++; // the escape's 0xFF
        }
      }
      return out;
    }

    void emit(List<InternalRow> out) {
      if (key == null || count == 0) {
        return;
      }
      Object[] kept = new Object[ids.size()];
      for (int i = 0; i < kept.length; i++) {
        kept[i] = UTF8String.fromString(ids.get(i));
      }
      GenericArrayData keptIds = new GenericArrayData(kept);
      GenericArrayData their = sketched ? new GenericArrayData(Arrays.copyOf(sketches, kept.length)) : null;
      GenericArrayData texts = null;
      if (sketched) {
        Object[] t = new Object[kepts.size()];
        for (int i = 0; i < t.length; i++) {
          t[i] = UTF8String.fromString(kepts.get(i));
        }
        texts = new GenericArrayData(t);
      }
      for (int i = 0; i < count; i++) {
        out.add(new GenericInternalRow(new Object[] {matched[i], simhash, distances[i], total, keptIds, their, texts}));
      }
      count = 0;
    }
  }
}
