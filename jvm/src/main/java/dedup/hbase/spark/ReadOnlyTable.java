package dedup.hbase.spark;

import java.util.EnumSet;
import java.util.Set;

import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The table of one of the helper's read-only data sources ({@code dedup-hbase-regions},
 * {@code dedup-hbase-fingerprints}, {@code dedup-hbase-lookup}): a batch scan of a fixed schema,
 * its partitions planned on the driver when a scan runs, each read in a task by the reader the
 * factory makes. A source says only what differs: its name, schema, partitions and reader. No
 * filter or column is pushed down.
 */
abstract class ReadOnlyTable implements SupportsRead {
  private final String name;
  private final StructType schema;

  ReadOnlyTable(String name, StructType schema) {
    this.name = name;
    this.schema = schema;
  }

  /** The partitions of a scan, planned on the driver as it runs. */
  abstract InputPartition[] partitions();

  /** The reader of each partition; serialized to the executors, so it must not hold the table. */
  abstract PartitionReaderFactory readers();

  @Override
  public final String name() {
    return name;
  }

  @Override
  public final StructType schema() {
    return schema;
  }

  @Override
  public final Set<TableCapability> capabilities() {
    return EnumSet.of(TableCapability.BATCH_READ);
  }

  @Override
  public final ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    return () -> new Scan() {
      @Override
      public StructType readSchema() {
        return schema;
      }

      @Override
      public Batch toBatch() {
        return new Batch() {
          @Override
          public InputPartition[] planInputPartitions() {
            return partitions();
          }

          @Override
          public PartitionReaderFactory createReaderFactory() {
            return readers();
          }
        };
      }
    };
  }

  /** The option {@code name} of the source {@code source}, or an error naming both. */
  static String required(CaseInsensitiveStringMap o, String source, String name) {
    String value = o.get(name);
    if (value == null) {
      throw new IllegalArgumentException(source + ": the option " + name + " is required");
    }
    return value;
  }
}
