package dedup.hbase.spark;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;

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
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.catalyst.InternalRow;

/**
 * {@code check --engine spark}'s read of the index, in the executors' JVMs with HBase's own
 * client (no gateway): each task scans the index rows of its scan prefixes and compares every
 * row once with the queries of its prefix.
 *
 * <p>An index row is segment(4B) + flag(1B) + simhash(8B) with one cell per document (the
 * qualifier is the document id, no value; in an index with a confirmation, {@code sketched}, the
 * id with each 0x00 byte as 0x00 0xFF, then 0x00 0x00 and the document's 8-byte sketch:
 * index/confirm.py). A row is one indexed fingerprint, so the copies of one text are one
 * comparison per query however many there are (skew).
 *
 * <p>Input rows: Spark's internal rows (query long, prefix long), the prefix being
 * {@code segment << 8 | flag}, sorted by prefix within each partition. A task cuts them into
 * chunks of about {@code chunk} probes (cut between prefixes) and reads each chunk with one scan:
 * a {@link MultiRowRangeFilter} over the chunk's prefixes, neighbours merged into one range
 * (the scheme has no rows between flag {@code flags} of one segment and flag 1 of the next).
 *
 * <p>Out: one row per (query, indexed fingerprint within k bits): query, simhash, distance,
 * total (the documents of the fingerprint), ids (the first {@code limit} in key order, or all
 * when {@code limit} is negative), and when {@code sketched} their sketches (else null). A
 * fingerprint found under several flags of one query comes out once per flag; the caller merges.
 * Nothing here applies a TTL or confirms.
 */
public final class IndexLookup {
  private IndexLookup() {
  }

  static final int PREFIX_BYTES = 5;
  static final int KEY_BYTES = 13;

  /**
   * The matches of every probe, as described above; {@code chunk}: the probes read with one scan
   * (at least; a prefix is not cut). A task's output is made one chunk at a time; its connection
   * is closed when the task ends.
   */
  public static JavaRDD<Row> runs(JavaRDD<InternalRow> probes, String quorum, int port, String znodeParent,
      String table, String family, int flags, int k, int limit, int chunk, boolean sketched) {
    byte[] columns = Bytes.toBytes(family);
    return probes.mapPartitions(it -> {
      if (!it.hasNext()) {
        return Collections.<Row>emptyIterator(); // no connection for an empty task
      }
      Connection connection = ConnectionFactory.createConnection(BulkLoad.conf(quorum, port, znodeParent));
      Table index = connection.getTable(TableName.valueOf(table));
      TaskContext.get().addTaskCompletionListener((TaskContext context) -> {
        try {
          index.close();
          connection.close();
        } catch (IOException e) {
          throw new RuntimeException(e);
        }
      });
      return new Iterator<Row>() {
        InternalRow held; // the first probe of the next chunk
        Iterator<Row> current = Collections.emptyIterator();

        @Override
        public boolean hasNext() {
          while (!current.hasNext() && (held != null || it.hasNext())) {
            Chunk c = new Chunk();
            if (held != null) {
              c.add(held.getLong(0), held.getLong(1));
              held = null;
            }
            while (it.hasNext()) {
              InternalRow probe = it.next();
              if (c.size() >= chunk && probe.getLong(1) != c.lastPrefix()) {
                held = probe.copy();
                break;
              }
              c.add(probe.getLong(0), probe.getLong(1));
            }
            List<Row> out = new ArrayList<>();
            try {
              c.scan(index, columns, flags, k, limit, sketched, out);
            } catch (IOException e) {
              throw new RuntimeException(e);
            }
            current = out.iterator();
          }
          return current.hasNext();
        }

        @Override
        public Row next() {
          if (!hasNext()) {
            throw new NoSuchElementException();
          }
          return current.next();
        }
      };
    });
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
    void scan(Table index, byte[] family, int flags, int k, int limit, boolean sketched, List<Row> out)
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
      Scan scan = new Scan().withStartRow(key(prefixes[0])).withStopRow(key(prefixes[distinct - 1] + 1))
          .addFamily(family).setCaching(1000).setBatch(1000).setCacheBlocks(false);
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
        sketches[ids.size()] = Bytes.toLong(qualifier, qualifier.length - 8);
        ids.add(Bytes.toString(unescaped(qualifier, qualifier.length - 10)));
      }
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

    void emit(List<Row> out) {
      if (key == null || count == 0) {
        return;
      }
      String[] kept = ids.toArray(new String[0]);
      Long[] their = null;
      if (sketched) {
        their = new Long[kept.length];
        for (int i = 0; i < kept.length; i++) {
          their[i] = sketches[i];
        }
      }
      for (int i = 0; i < count; i++) {
        out.add(RowFactory.create(matched[i], simhash, distances[i], total, kept, their));
      }
      count = 0;
    }
  }
}
