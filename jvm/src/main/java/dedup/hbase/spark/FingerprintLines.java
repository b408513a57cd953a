package dedup.hbase.spark;

import java.io.IOException;
import java.io.InputStream;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.io.compress.CompressionCodec;
import org.apache.hadoop.io.compress.CompressionCodecFactory;
import org.apache.hadoop.mapreduce.InputSplit;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.lib.input.FileSplit;
import org.apache.hadoop.mapreduce.lib.input.LineRecordReader;
import org.apache.hadoop.mapreduce.lib.input.TextInputFormat;
import org.apache.hadoop.mapreduce.task.TaskAttemptContextImpl;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The Spark data source {@code dedup-hbase-fingerprints}: JSON lines files of precomputed
 * fingerprints ({@code load --fingerprints}) read in the executors' JVMs, each line checked by
 * {@link JsonLines.Checker}; Hadoop's line reader, each file cut into splits of at most its
 * {@code splitBytes} (a .gz or .bz2 file by its codec, whole). Options: {@code files} (URIs,
 * newline-separated), {@code ordinals} and {@code splitBytes} (comma-separated, one per file: its
 * input ordinal, its largest split), {@code fields} (the id, text, simhash, title and featurizer
 * fields, TAB-separated), and {@code offsets} or {@code heads}.
 *
 * <p>A row's line is its line number in its file, every line counted (blank ones too, as the
 * Python reader counts them). A split does not know how many lines the splits before it hold,
 * so a read is two, over the same splits (planned on the driver, in file and offset order):
 * without {@code offsets}, a row (split, ordinal, lines) per split, by the line reader alone (no
 * JSON; lines -1: a compressed file that is damaged, its lines not to be read here); with {@code
 * offsets} (comma-separated: the lines of its file before each split, in that order), the rows
 * of {@link JsonLines#SCHEMA}. With {@code heads} (any value) instead, one row per file
 * (ordinal, magic, head): its first {@link #MAGIC_BYTES} bytes as stored, and its first {@link
 * #HEAD_BYTES} as its line reader will read them (through the codec its name picks; null when
 * that stream cannot be read: a corrupt or truncated compressed file), which the driver reads
 * to choose each file's encoding and to find binary files before any line is read. This source
 * does not write.
 */
public final class FingerprintLines implements TableProvider, DataSourceRegister {
  static final StructType COUNTS = new StructType().add("split", DataTypes.IntegerType)
      .add("ordinal", DataTypes.IntegerType).add("lines", DataTypes.LongType);

  static final StructType HEADS = new StructType().add("ordinal", DataTypes.IntegerType)
      .add("magic", DataTypes.BinaryType).add("head", DataTypes.BinaryType);

  static final String NAME = "dedup-hbase-fingerprints";
  static final int MAGIC_BYTES = 6;
  static final int HEAD_BYTES = 8192;

  @Override
  public String shortName() {
    return NAME;
  }

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    return schemaOf(options);
  }

  static StructType schemaOf(CaseInsensitiveStringMap options) {
    return options.containsKey("heads") ? HEADS : options.containsKey("offsets") ? JsonLines.SCHEMA : COUNTS;
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
    return new Files(new CaseInsensitiveStringMap(properties));
  }

  /** One split of one file, and what its reader needs. */
  static final class Split implements InputPartition, Serializable {
    final int index;
    final int ordinal;
    final String path;
    final long start;
    final long length;
    final long before; // lines before the split; -1: count the split's lines; -2: read the file's head

    Split(int index, int ordinal, String path, long start, long length, long before) {
      this.index = index;
      this.ordinal = ordinal;
      this.path = path;
      this.start = start;
      this.length = length;
      this.before = before;
    }
  }

  static final class Files extends ReadOnlyTable {
    final String[] files;
    final int[] ordinals;
    final long[] splitBytes;
    final String[] fields;
    final long[] offsets; // null: the counting read
    final boolean heads;

    Files(CaseInsensitiveStringMap o) {
      super(NAME, schemaOf(o));
      heads = o.containsKey("heads");
      files = ReadOnlyTable.required(o, NAME, "files").split("\n", -1);
      ordinals = Arrays.stream(ReadOnlyTable.required(o, NAME, "ordinals").split(",")).mapToInt(Integer::parseInt)
          .toArray();
      splitBytes = Arrays.stream(ReadOnlyTable.required(o, NAME, "splitBytes").split(",")).mapToLong(Long::parseLong)
          .toArray();
      fields = ReadOnlyTable.required(o, NAME, "fields").split("\t", -1);
      String given = o.get("offsets");
      offsets = given == null ? null : given.isEmpty() ? new long[0]
          : Arrays.stream(given.split(",")).mapToLong(Long::parseLong).toArray();
      if (ordinals.length != files.length || splitBytes.length != files.length || fields.length != 5) {
        throw new IllegalArgumentException("dedup-hbase-fingerprints: one ordinal and split size per file, and "
            + "five fields");
      }
    }

    @Override
    InputPartition[] partitions() {
      if (heads) {
        InputPartition[] each = new InputPartition[files.length];
        for (int f = 0; f < files.length; f++) {
          each[f] = new Split(f, ordinals[f], files[f], 0, -1, -2);
        }
        return each;
      }
      return splits().toArray(new InputPartition[0]);
    }

    @Override
    PartitionReaderFactory readers() {
      String[] names = fields;
      return partition -> ((Split) partition).before == -2 ? new HeadReader((Split) partition)
          : new LinesReader((Split) partition, names);
    }

    /** Every file's splits, as Hadoop's TextInputFormat cuts them, in file and offset order. */
    List<Split> splits() {
      Configuration base = SparkContext.getOrCreate().hadoopConfiguration();
      List<Split> splits = new ArrayList<>();
      try {
        for (int f = 0; f < files.length; f++) {
          Configuration conf = new Configuration(base);
          conf.setLong("mapreduce.input.fileinputformat.split.maxsize", Math.max(1L << 16, splitBytes[f]));
          Job job = Job.getInstance(conf);
          FileInputFormat.setInputPaths(job, new Path(files[f]));
          for (InputSplit s : new TextInputFormat().getSplits(job)) {
            FileSplit split = (FileSplit) s;
            int i = splits.size();
            if (offsets != null && i >= offsets.length) {
              throw new IllegalStateException(files[f] + " changed between the two reads: more splits than offsets");
            }
            splits.add(new Split(i, ordinals[f], split.getPath().toString(), split.getStart(), split.getLength(),
                offsets == null ? -1 : offsets[i]));
          }
        }
      } catch (IOException e) {
        throw new IllegalStateException("cannot read " + String.join(", ", files) + ": " + e, e);
      }
      if (offsets != null && splits.size() != offsets.length) {
        throw new IllegalStateException("the input changed between the two reads: fewer splits than offsets");
      }
      return splits;
    }
  }

  /** A file's head: one row (ordinal, magic, head). */
  static final class HeadReader implements PartitionReader<InternalRow> {
    final Split file;
    InternalRow current;

    HeadReader(Split file) {
      this.file = file;
    }

    @Override
    public boolean next() throws IOException {
      if (current != null) {
        return false;
      }
      Configuration conf = ExecutorHadoop.conf();
      Path path = new Path(file.path);
      FileSystem fs = path.getFileSystem(conf);
      byte[] magic;
      byte[] head;
      try (InputStream in = fs.open(path)) {
        magic = first(in, MAGIC_BYTES);
      }
      CompressionCodec codec = new CompressionCodecFactory(conf).getCodec(path);
      try (InputStream in = codec == null ? fs.open(path) : codec.createInputStream(fs.open(path))) {
        head = first(in, HEAD_BYTES);
      } catch (IOException | RuntimeException e) {  // a corrupt or cut compressed stream
        head = null;
      }
      current = new GenericInternalRow(new Object[] {file.ordinal, magic, head});
      return true;
    }

    @Override
    public InternalRow get() {
      return current;
    }

    static byte[] first(InputStream in, int n) throws IOException {
      byte[] buffer = new byte[n];
      int got = 0;
      for (int r; got < n && (r = in.read(buffer, got, n - got)) > 0; ) {
        got += r;
      }
      return Arrays.copyOf(buffer, got);
    }

    @Override
    public void close() {
    }
  }

  /**
   * A split's lines: counted (one row), or each checked into a row (a fingerprint's blank line:
   * none). A compressed file that cannot be read to its end (cut off, corrupt) is counted as -1
   * lines, not an error that stops the job: the driver leaves it to the Python reader, which
   * keeps the records before the damage and rejects the rest in one record, as a local read does.
   */
  static final class LinesReader implements PartitionReader<InternalRow> {
    final Split split;
    final JsonLines.Checker checker;
    final LineRecordReader lines = new LineRecordReader();
    final boolean compressed;
    long read; // lines read so far
    boolean counted;
    InternalRow current;

    LinesReader(Split split, String[] fields) {
      this.split = split;
      this.checker = split.before < 0 ? null : new JsonLines.Checker(fields);
      Configuration conf = ExecutorHadoop.conf();
      this.compressed = new CompressionCodecFactory(conf).getCodec(new Path(split.path)) != null;
      TaskAttemptContextImpl context = new TaskAttemptContextImpl(conf, new TaskAttemptID());
      try {
        lines.initialize(new FileSplit(new Path(split.path), split.start, split.length, (String[]) null), context);
      } catch (IOException e) {
        throw new UncheckedIOException("cannot read " + split.path + ": " + e, e);
      }
    }

    @Override
    public boolean next() throws IOException {
      if (checker == null) {
        if (counted) {
          return false;
        }
        try {
          while (lines.nextKeyValue()) {
            read++;
          }
        } catch (IOException | RuntimeException e) {  // a cut-off or corrupt compressed stream
          if (!compressed) {
            throw e;
          }
          read = -1;
        }
        counted = true;
        current = new GenericInternalRow(new Object[] {split.index, split.ordinal, read});
        return true;
      }
      while (lines.nextKeyValue()) {
        read++;
        Text line = lines.getCurrentValue();
        current = checker.row(split.ordinal, split.before + read, Arrays.copyOf(line.getBytes(), line.getLength()));
        if (current != null) {
          return true;
        }
      }
      return false;
    }

    @Override
    public InternalRow get() {
      return current;
    }

    @Override
    public void close() throws IOException {
      lines.close();
    }
  }
}
