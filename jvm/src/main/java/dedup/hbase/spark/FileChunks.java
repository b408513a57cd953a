package dedup.hbase.spark;

import java.io.IOException;
import java.io.InputStream;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.LongStream;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
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
 * The Spark data source {@code dedup-hbase-chunks}: each file's bytes as stored (no codec), in
 * order, as rows (ordinal, chunk) of at most {@code chunkBytes} bytes, so that the task that reads
 * a file holds a chunk of it at a time, never the whole file (Spark's {@code binaryFile} holds a
 * file in one row). A file's rows are its chunks in order, at least one (an empty file: one empty
 * chunk), and all in one partition; small files share a partition, one after another in input
 * order, as Spark's file sources pack them: up to min(128 MiB, max(4 MiB, all the bytes / the
 * default parallelism)) a partition, or {@code partitionBytes} when given. Options: {@code files}
 * (URIs, newline-separated), {@code ordinals} (comma-separated, one per file: its input ordinal),
 * {@code chunkBytes}, and {@code partitionBytes}. What the bytes hold (CSV, TSV, a whole-file
 * document, a compressed or damaged file) is the Python reader's to judge, as in a local read.
 * This source does not write.
 */
public final class FileChunks implements TableProvider, DataSourceRegister {
  static final StructType SCHEMA = new StructType()
      .add("ordinal", DataTypes.IntegerType).add("chunk", DataTypes.BinaryType);

  static final String NAME = "dedup-hbase-chunks";
  static final long MAX_PARTITION_BYTES = 128L << 20;
  static final long MIN_PARTITION_BYTES = 4L << 20;

  @Override
  public String shortName() {
    return NAME;
  }

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    return SCHEMA;
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
    CaseInsensitiveStringMap o = new CaseInsensitiveStringMap(properties);
    String[] files = ReadOnlyTable.required(o, NAME, "files").split("\n", -1);
    int[] ordinals = Arrays.stream(ReadOnlyTable.required(o, NAME, "ordinals").split(","))
        .mapToInt(Integer::parseInt).toArray();
    int chunkBytes = Integer.parseInt(ReadOnlyTable.required(o, NAME, "chunkBytes"));
    String given = o.get("partitionBytes");
    if (ordinals.length != files.length || chunkBytes < 1) {
      throw new IllegalArgumentException(NAME + ": one ordinal per file, and chunkBytes of 1 or more");
    }
    return new ReadOnlyTable(NAME, SCHEMA) {
      @Override
      InputPartition[] partitions() {
        long[] sizes = sizes(files);
        long target = given != null ? Long.parseLong(given) : Math.min(MAX_PARTITION_BYTES, Math.max(
            MIN_PARTITION_BYTES, LongStream.of(sizes).sum() / SparkContext.getOrCreate().defaultParallelism()));
        List<InputPartition> out = new ArrayList<>();
        List<Integer> ords = new ArrayList<>();
        List<String> paths = new ArrayList<>();
        long bytes = 0;
        for (int f = 0; f < files.length; f++) {
          if (!paths.isEmpty() && bytes + sizes[f] > target) {
            out.add(new Files(ords, paths, chunkBytes));
            ords = new ArrayList<>();
            paths = new ArrayList<>();
            bytes = 0;
          }
          ords.add(ordinals[f]);
          paths.add(files[f]);
          bytes += sizes[f];
        }
        if (!paths.isEmpty()) {
          out.add(new Files(ords, paths, chunkBytes));
        }
        return out.toArray(new InputPartition[0]);
      }

      @Override
      PartitionReaderFactory readers() {
        return partition -> new ChunkReader((Files) partition);
      }
    };
  }

  /**
   * Each file's length in bytes, on the driver: one listing of each folder that holds two or more
   * of the files (an object store answers a listing of a thousand files in one request, and a
   * status in one request a file: 10^5 files on S3 were 10^5 requests), one status call for a
   * file alone in its folder or missing from its folder's listing. A folder that holds a few of
   * the files among very many others is listed whole: the cost of this rule.
   */
  static long[] sizes(String[] files) {
    Configuration conf = SparkContext.getOrCreate().hadoopConfiguration();
    long[] out = new long[files.length];
    Arrays.fill(out, -1);
    try {
      Map<Path, List<Integer>> byFolder = new HashMap<>();
      Path[] paths = new Path[files.length];
      for (int f = 0; f < files.length; f++) {
        Path path = new Path(files[f]);
        paths[f] = path.getFileSystem(conf).makeQualified(path);
        if (paths[f].getParent() != null) {
          byFolder.computeIfAbsent(paths[f].getParent(), k -> new ArrayList<>()).add(f);
        }
      }
      for (Map.Entry<Path, List<Integer>> folder : byFolder.entrySet()) {
        if (folder.getValue().size() < 2) {
          continue;
        }
        Map<Path, Long> listed = new HashMap<>();
        for (FileStatus status : folder.getKey().getFileSystem(conf).listStatus(folder.getKey())) {
          listed.put(status.getPath(), status.getLen());
        }
        for (int f : folder.getValue()) {
          out[f] = listed.getOrDefault(paths[f], -1L);
        }
      }
      for (int f = 0; f < files.length; f++) {
        if (out[f] < 0) {
          out[f] = paths[f].getFileSystem(conf).getFileStatus(paths[f]).getLen();
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(NAME + ": cannot read " + String.join(", ", files) + ": " + e, e);
    }
    return out;
  }

  /** Files read one after another by one task, and the size of their chunks. */
  static final class Files implements InputPartition, Serializable {
    final int[] ordinals;
    final String[] paths;
    final int chunkBytes;

    Files(List<Integer> ordinals, List<String> paths, int chunkBytes) {
      this.ordinals = ordinals.stream().mapToInt(Integer::intValue).toArray();
      this.paths = paths.toArray(new String[0]);
      this.chunkBytes = chunkBytes;
    }
  }

  /** The files' chunks, each full but a file's last. */
  static final class ChunkReader implements PartitionReader<InternalRow> {
    final Files files;
    int file = -1;
    InputStream in;
    boolean any;
    InternalRow current;

    ChunkReader(Files files) {
      this.files = files;
    }

    @Override
    public boolean next() throws IOException {
      while (true) {
        if (in == null) {
          if (++file == files.paths.length) {
            return false;
          }
          Path path = new Path(files.paths[file]);
          in = path.getFileSystem(ExecutorHadoop.conf()).open(path);
          any = false;
        }
        byte[] chunk = FingerprintLines.HeadReader.first(in, files.chunkBytes);
        if (chunk.length > 0 || !any) {
          any = true;
          current = new GenericInternalRow(new Object[] {files.ordinals[file], chunk});
          return true;
        }
        in.close();
        in = null;
      }
    }

    @Override
    public InternalRow get() {
      return current;
    }

    @Override
    public void close() throws IOException {
      if (in != null) {
        in.close();
      }
    }
  }
}
