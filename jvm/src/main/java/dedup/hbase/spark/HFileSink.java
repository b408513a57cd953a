package dedup.hbase.spark;

import java.io.IOException;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.SparkContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The Spark data source {@code dedup-hbase-hfiles}: a load's cells written as HFiles in the
 * executors (one per Spark partition and HBase region, {@link HFileWriter}) and, when every task
 * has committed, handed to HBase by BulkLoadHFiles from the driver ({@link BulkLoad#load}), table
 * by table in the order given. Reached from Python through the DataFrame API alone
 * ({@code df.write.format("dedup-hbase-hfiles").mode("append").options(...).save()}), so it runs
 * the same in classic Spark and through Spark Connect.
 *
 * <p>Input: (key binary, qualifier binary, value binary), sorted by key then qualifier within each
 * partition; partition p belongs to the last table whose {@code firsts} entry is at most p. Options:
 * <ul>
 * <li>{@code tables}: one line per table, TAB-separated (folder, table, family, compression,
 * encoding, bloom, bloom prefix length, block size, region split keys as comma-joined hex);
 * <li>{@code firsts}: each table's first partition, comma-joined;
 * <li>{@code timestamp} (every cell's) and {@code tag} (in the files' names);
 * <li>{@code quorum}, {@code port}, {@code parent}: HBase's ZooKeeper; without {@code quorum} the
 * files are written and kept, not loaded (for a bulk load by other means, such as
 * {@code hbase completebulkload});
 * <li>{@code staging}: the load's folder, holding every table's folder: removed before the tasks
 * start (what a killed run of the same load left) and, with a load, after it, loaded or not;
 * <li>{@code copy}: BulkLoadHFiles copies the files (else moves them when it can).
 * </ul>
 *
 * <p>A table whose regions changed since the files were cut (a split or a merge) is not loaded
 * (HBASE-30501): the write fails with a message holding {@link #REGIONS_CHANGED} and the table's
 * name; a table loaded before it in the same write stays loaded. Any other failure of the load
 * fails the write with "bulk load of TABLE failed: " and the causes. Each table loaded is logged
 * (INFO: "bulk load of TABLE: N HFiles"). This source does not read.
 */
public final class HFileSink implements TableProvider, DataSourceRegister {
  /** The start of the message of a write refused because a table's regions changed. */
  public static final String REGIONS_CHANGED = "dedup-hbase: regions changed: ";

  private static final Logger LOG = LoggerFactory.getLogger(HFileSink.class);

  static final StructType SCHEMA = new StructType().add("key", DataTypes.BinaryType)
      .add("qualifier", DataTypes.BinaryType).add("value", DataTypes.BinaryType);

  @Override
  public String shortName() {
    return "dedup-hbase-hfiles";
  }

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    return SCHEMA;
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
    return new Sink(new Options(new CaseInsensitiveStringMap(properties)));
  }

  /** The options, parsed on the driver, shipped to the tasks. */
  static final class Options implements Serializable {
    final String[] tables;
    final int[] firsts;
    final long timestamp;
    final long tag;
    final String quorum;
    final int port;
    final String parent;
    final String staging;
    final boolean copy;

    Options(CaseInsensitiveStringMap o) {
      tables = required(o, "tables").split("\n");
      String[] f = required(o, "firsts").split(",");
      firsts = new int[f.length];
      for (int i = 0; i < f.length; i++) {
        firsts[i] = Integer.parseInt(f[i].trim());
      }
      if (firsts.length != tables.length) {
        throw new IllegalArgumentException("dedup-hbase-hfiles: " + tables.length + " tables but "
            + firsts.length + " firsts");
      }
      timestamp = Long.parseLong(required(o, "timestamp"));
      tag = Long.parseLong(required(o, "tag"));
      quorum = o.get("quorum");
      port = quorum == null ? 0 : Integer.parseInt(required(o, "port"));
      parent = o.getOrDefault("parent", "");
      staging = required(o, "staging");
      copy = Boolean.parseBoolean(o.getOrDefault("copy", "false"));
    }

    static String required(CaseInsensitiveStringMap o, String name) {
      String value = o.get(name);
      if (value == null) {
        throw new IllegalArgumentException("dedup-hbase-hfiles: the option " + name + " is required");
      }
      return value;
    }

    String[] spec(int partition) {
      int t = 0;
      while (t + 1 < firsts.length && firsts[t + 1] <= partition) {
        t++;
      }
      return tables[t].split("\t", -1);
    }
  }

  static final class Sink implements SupportsWrite {
    final Options options;

    Sink(Options options) {
      this.options = options;
    }

    @Override
    public String name() {
      return "dedup-hbase-hfiles";
    }

    @Override
    public StructType schema() {
      return SCHEMA;
    }

    @Override
    public Set<TableCapability> capabilities() {
      return EnumSet.of(TableCapability.BATCH_WRITE);
    }

    @Override
    public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
      return new WriteBuilder() {
        @Override
        public Write build() {
          return new Write() {
            @Override
            public BatchWrite toBatch() {
              removeStaging(options); // what a killed run of the same load left
              return new Load(options);
            }
          };
        }
      };
    }
  }

  /** The files of one task: "path TAB cells TAB bytes" per file. */
  static final class Files implements WriterCommitMessage {
    final List<String> files;

    Files(List<String> files) {
      this.files = files;
    }
  }

  static final class Load implements BatchWrite {
    final Options options;

    Load(Options options) {
      this.options = options;
    }

    @Override
    public DataWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
      Options o = options;
      return (DataWriterFactory) (partitionId, taskId) -> new TaskWriter(o, partitionId);
    }

    @Override
    public void commit(WriterCommitMessage[] messages) {
      if (options.quorum == null) {
        return; // written, not loaded: the files stay
      }
      try {
        for (String spec : options.tables) {
          String folder = spec.split("\t", -1)[0];
          String table = spec.split("\t", -1)[1];
          if (!hasFiles(messages, folder)) {
            continue;
          }
          int loaded = BulkLoad.load(options.quorum, options.port, options.parent, table, folder, options.copy);
          if (loaded < 0) {
            throw new IllegalStateException(REGIONS_CHANGED + table);
          }
          LOG.info("bulk load of {}: {} HFiles", table, loaded);
        }
      } catch (IOException e) {
        throw new IllegalStateException(e.getMessage(), e);
      } finally {
        removeStaging(options);
      }
    }

    @Override
    public void abort(WriterCommitMessage[] messages) {
      removeStaging(options);
    }
  }

  static boolean hasFiles(WriterCommitMessage[] messages, String folder) {
    String prefix = new Path(folder).toUri().getPath() + "/";
    for (WriterCommitMessage m : messages) {
      if (m instanceof Files) {
        for (String line : ((Files) m).files) {
          if (new Path(line.split("\t")[0]).toUri().getPath().startsWith(prefix)) {
            return true;
          }
        }
      }
    }
    return false;
  }

  /** Remove the staging folder (on the driver). */
  static void removeStaging(Options options) {
    try {
      Path staging = new Path(options.staging);
      // the driver's Hadoop configuration (with Spark's spark.hadoop.* settings)
      Configuration conf = SparkContext.getOrCreate().hadoopConfiguration();
      FileSystem fs = staging.getFileSystem(conf);
      if (fs.exists(staging)) {
        fs.delete(staging, true);
      }
    } catch (IOException e) {
      throw new IllegalStateException("cannot remove the staging folder " + options.staging + ": " + e, e);
    }
  }

  /** One task's HFiles: a file per HBase region its rows cross. */
  static final class TaskWriter implements DataWriter<InternalRow> {
    final Options options;
    final int partition;
    HFileWriter.Writer writer;

    TaskWriter(Options options, int partition) {
      this.options = options;
      this.partition = partition;
    }

    @Override
    public void write(InternalRow row) throws IOException {
      if (writer == null) { // no file, no Hadoop configuration for an empty task
        String[] f = options.spec(partition);
        writer = new HFileWriter.Writer(f[0], f[1], f[2], f[3], f[4], f[5], Integer.parseInt(f[6]),
            Integer.parseInt(f[7]), HFileWriter.parseHex(f[8]), options.timestamp, options.tag, partition);
      }
      writer.append(row.getBinary(0), row.getBinary(1), row.getBinary(2));
    }

    @Override
    public WriterCommitMessage commit() throws IOException {
      if (writer == null) {
        return new Files(new ArrayList<>());
      }
      writer.finish();
      return new Files(writer.files);
    }

    @Override
    public void abort() {
      if (writer != null) {
        writer.abort();
      }
    }

    @Override
    public void close() {
    }
  }
}
