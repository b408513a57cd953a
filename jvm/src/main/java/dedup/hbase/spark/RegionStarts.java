package dedup.hbase.spark;

import java.io.IOException;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.RegionLocator;
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
import org.apache.spark.unsafe.types.UTF8String;

/**
 * The Spark data source {@code dedup-hbase-regions}: the start keys of HBase tables' regions but
 * the first (empty) one, as rows (table string, start binary), read on the driver when the scan
 * is planned (the executors do not reach HBase). Options: {@code tables} (comma-joined names),
 * {@code quorum}, {@code port}, {@code parent} (HBase's ZooKeeper). A table that does not exist
 * fails the read. This source does not write.
 */
public final class RegionStarts implements TableProvider, DataSourceRegister {
  static final StructType SCHEMA = new StructType().add("table", DataTypes.StringType)
      .add("start", DataTypes.BinaryType);

  static final String NAME = "dedup-hbase-regions";

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
    String tables = ReadOnlyTable.required(o, NAME, "tables");
    String quorum = ReadOnlyTable.required(o, NAME, "quorum");
    int port = Integer.parseInt(ReadOnlyTable.required(o, NAME, "port"));
    String parent = o.getOrDefault("parent", "");
    return new Regions(tables, quorum, port, parent);
  }

  static final class Regions extends ReadOnlyTable {
    final String tables;
    final String quorum;
    final int port;
    final String parent;

    Regions(String tables, String quorum, int port, String parent) {
      super(NAME, SCHEMA);
      this.tables = tables;
      this.quorum = quorum;
      this.port = port;
      this.parent = parent;
    }

    @Override
    InputPartition[] partitions() {
      return new InputPartition[] {new Starts(read())};
    }

    @Override
    PartitionReaderFactory readers() {
      return partition -> new StartsReader(((Starts) partition).rows);
    }

    /** Each table's region start keys but the first, read now. */
    List<Object[]> read() {
      List<Object[]> rows = new ArrayList<>();
      try (Connection connection = ConnectionFactory.createConnection(BulkLoad.conf(quorum, port, parent))) {
        for (String table : tables.split(",")) {
          try (RegionLocator locator = connection.getRegionLocator(TableName.valueOf(table))) {
            for (byte[] start : locator.getStartKeys()) {
              if (start.length > 0) {
                rows.add(new Object[] {table, start});
              }
            }
          }
        }
      } catch (IOException e) {
        throw new IllegalStateException("cannot read the regions of " + tables + ": " + BulkLoad.causes(e), e);
      }
      return rows;
    }
  }

  /** The rows read on the driver, shipped to the one task. */
  static final class Starts implements InputPartition, Serializable {
    final List<Object[]> rows;

    Starts(List<Object[]> rows) {
      this.rows = rows;
    }
  }

  static final class StartsReader implements PartitionReader<InternalRow> {
    final List<Object[]> rows;
    int next = -1;

    StartsReader(List<Object[]> rows) {
      this.rows = rows;
    }

    @Override
    public boolean next() {
      next++;
      return next < rows.size();
    }

    @Override
    public InternalRow get() {
      Object[] row = rows.get(next);
      return new GenericInternalRow(new Object[] {UTF8String.fromString((String) row[0]), row[1]});
    }

    @Override
    public void close() {
    }
  }
}
