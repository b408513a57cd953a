/*
 * Licensed to the Apache Software Foundation (ASF) under one
 * or more contributor license agreements.  See the NOTICE file
 * distributed with this work for additional information
 * regarding copyright ownership.  The ASF licenses this file
 * to you under the Apache License, Version 2.0 (the
 * "License"); you may not use this file except in compliance
 * with the License.  You may obtain a copy of the License at
 *
 *     http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing, software
 * distributed under the License is distributed on an "AS IS" BASIS,
 * WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 * See the License for the specific language governing permissions and
 * limitations under the License.
 */

// HBase's Thrift2 IDL, from Apache HBase 2.6.1:
// hbase-thrift/src/main/resources/org/apache/hadoop/hbase/thrift2/hbase.thrift
// (also inside hbase-thrift-2.6.1.jar as org/apache/hadoop/hbase/thrift2/hbase.thrift).
//
// Cut by dedup-hbase to what it calls: the service keeps only the methods the HBase store
// makes (get, getMultiple, putMultiple, deleteMultiple, checkAndPut, checkAndDelete,
// checkAndMutate, getScannerResults, getAllRegionLocations, tableExists, createTable) and
// getTableDescriptor, which its tests call; the structs, unions, enums and exceptions are those
// these methods take or return and those their fields use, each whole (HBase's field ids,
// types and values). Written shorter than in HBase: the service (a line of comment per method),
// the enums (their values on a line, without comments) and the comments "Thrift wrapper around
// <Java class>". tests/test_hbase_thrift2.py makes every one of these calls against a real
// Thrift2 gateway.

// NOTE: The "required" and "optional" keywords for the service methods are purely for documentation

namespace java org.apache.hadoop.hbase.thrift2.generated
namespace cpp apache.hadoop.hbase.thrift2
namespace rb Apache.Hadoop.Hbase.Thrift2
namespace py hbase
namespace perl Hbase

struct TTimeRange {
  1: required i64 minStamp,
  2: required i64 maxStamp
}

/**
 * Addresses a single cell or multiple cells
 * in a HBase table by column family and optionally
 * a column qualifier and timestamp
 */
struct TColumn {
  1: required binary family,
  2: optional binary qualifier,
  3: optional i64 timestamp
}

/**
 * Represents a single cell and its value.
 */
struct TColumnValue {
  1: required binary family,
  2: required binary qualifier,
  3: required binary value,
  4: optional i64 timestamp,
  5: optional binary tags,
  6: optional byte type
}

/**
 * if no Result is found, row and columnValues will not be set.
 */
struct TResult {
  1: optional binary row,
  2: required list<TColumnValue> columnValues,
  3: optional bool stale = false
  4: optional bool partial = false
}

/**
 * Specify type of delete:
 *  - DELETE_COLUMN means exactly one version will be removed,
 *  - DELETE_COLUMNS means previous versions will also be removed.
 */
enum TDeleteType { DELETE_COLUMN = 0, DELETE_COLUMNS = 1, DELETE_FAMILY = 2, DELETE_FAMILY_VERSION = 3 }

/**
 * Specify Durability:
 *  - SKIP_WAL means do not write the Mutation to the WAL.
 *  - ASYNC_WAL means write the Mutation to the WAL asynchronously,
 *  - SYNC_WAL means write the Mutation to the WAL synchronously,
 *  - FSYNC_WAL means Write the Mutation to the WAL synchronously and force the entries to disk.
 */

enum TDurability { USE_DEFAULT = 0, SKIP_WAL = 1, ASYNC_WAL = 2, SYNC_WAL = 3, FSYNC_WAL = 4 }

struct TAuthorization {
 1: optional list<string> labels
}

struct TCellVisibility {
 1: optional string expression
}

/**
 * Specify Consistency:
 *  - STRONG means reads only from primary region
 *  - TIMELINE means reads might return values from secondary region replicas
 */
enum TConsistency { STRONG = 1, TIMELINE = 2 }

/**
 * Used to perform Get operations on a single row.
 *
 * The scope can be further narrowed down by specifying a list of
 * columns or column families.
 *
 * To get everything for a row, instantiate a Get object with just the row to get.
 * To further define the scope of what to get you can add a timestamp or time range
 * with an optional maximum number of versions to return.
 *
 * If you specify a time range and a timestamp the range is ignored.
 * Timestamps on TColumns are ignored.
 */
struct TGet {
  1: required binary row,
  2: optional list<TColumn> columns,

  3: optional i64 timestamp,
  4: optional TTimeRange timeRange,

  5: optional i32 maxVersions,
  6: optional binary filterString,
  7: optional map<binary, binary> attributes
  8: optional TAuthorization authorizations
  9: optional TConsistency consistency
  10: optional i32 targetReplicaId
  11: optional bool cacheBlocks
  12: optional i32 storeLimit
  13: optional i32 storeOffset
  14: optional bool existence_only
  15: optional binary filterBytes

}

/**
 * Used to perform Put operations for a single row.
 *
 * Add column values to this object and they'll be added.
 * You can provide a default timestamp if the column values
 * don't have one. If you don't provide a default timestamp
 * the current time is inserted.
 *
 * You can specify how this Put should be written to the write-ahead Log (WAL)
 * by changing the durability. If you don't provide durability, it defaults to
 * column family's default setting for durability.
 */
struct TPut {
  1: required binary row,
  2: required list<TColumnValue> columnValues
  3: optional i64 timestamp,
  5: optional map<binary, binary> attributes,
  6: optional TDurability durability,
  7: optional TCellVisibility cellVisibility
}

/**
 * Used to perform Delete operations on a single row.
 *
 * The scope can be further narrowed down by specifying a list of
 * columns or column families as TColumns.
 *
 * Specifying only a family in a TColumn will delete the whole family.
 * If a timestamp is specified all versions with a timestamp less than
 * or equal to this will be deleted. If no timestamp is specified the
 * current time will be used.
 *
 * Specifying a family and a column qualifier in a TColumn will delete only
 * this qualifier. If a timestamp is specified only versions equal
 * to this timestamp will be deleted. If no timestamp is specified the
 * most recent version will be deleted.  To delete all previous versions,
 * specify the DELETE_COLUMNS TDeleteType.
 *
 * The top level timestamp is only used if a complete row should be deleted
 * (i.e. no columns are passed) and if it is specified it works the same way
 * as if you had added a TColumn for every column family and this timestamp
 * (i.e. all versions older than or equal in all column families will be deleted)
 *
 * You can specify how this Delete should be written to the write-ahead Log (WAL)
 * by changing the durability. If you don't provide durability, it defaults to
 * column family's default setting for durability.
 */
struct TDelete {
  1: required binary row,
  2: optional list<TColumn> columns,
  3: optional i64 timestamp,
  4: optional TDeleteType deleteType = 1,
  6: optional map<binary, binary> attributes,
  7: optional TDurability durability

}

enum TReadType { DEFAULT = 1, STREAM = 2, PREAD = 3 }

/**
 * Any timestamps in the columns are ignored but the colFamTimeRangeMap included, use timeRange to select by timestamp.
 * Max versions defaults to 1.
 */
struct TScan {
  1: optional binary startRow,
  2: optional binary stopRow,
  3: optional list<TColumn> columns
  4: optional i32 caching,
  5: optional i32 maxVersions=1,
  6: optional TTimeRange timeRange,
  7: optional binary filterString,
  8: optional i32 batchSize,
  9: optional map<binary, binary> attributes
  10: optional TAuthorization authorizations
  11: optional bool reversed
  12: optional bool cacheBlocks
  13: optional map<binary,TTimeRange> colFamTimeRangeMap
  14: optional TReadType readType
  15: optional i32 limit
  16: optional TConsistency consistency
  17: optional i32 targetReplicaId
  18: optional binary filterBytes

}

/**
 * Atomic mutation for the specified row. It can be either Put or Delete.
 */
union TMutation {
  1: TPut put
  2: TDelete deleteSingle
}

/**
 * A TRowMutations object is used to apply a number of Mutations to a single row.
 */
struct TRowMutations {
  1: required binary row
  2: required list<TMutation> mutations
}

struct THRegionInfo {
  1: required i64 regionId
  2: required binary tableName
  3: optional binary startKey
  4: optional binary endKey
  5: optional bool offline
  6: optional bool split
  7: optional i32 replicaId
}

struct TServerName {
  1: required string hostName
  2: optional i32 port
  3: optional i64 startCode
}

struct THRegionLocation {
  1: required TServerName serverName
  2: required THRegionInfo regionInfo
}

/** Thrift wrapper around org.apache.hadoop.hbase.filter.CompareFilter$CompareOp. */
enum TCompareOp {
  LESS = 0, LESS_OR_EQUAL = 1, EQUAL = 2, NOT_EQUAL = 3, GREATER_OR_EQUAL = 4, GREATER = 5, NO_OP = 6
}

/** Thrift wrapper around org.apache.hadoop.hbase.regionserver.BloomType */
enum TBloomFilterType { NONE = 0, ROW = 1, ROWCOL = 2, ROWPREFIX_FIXED_LENGTH = 3 }

/** Thrift wrapper around org.apache.hadoop.hbase.io.compress.Algorithm */
enum TCompressionAlgorithm { LZO = 0, GZ = 1, NONE = 2, SNAPPY = 3, LZ4 = 4, BZIP2 = 5, ZSTD = 6 }

/** Thrift wrapper around org.apache.hadoop.hbase.io.encoding.DataBlockEncoding */
enum TDataBlockEncoding { NONE = 0, PREFIX = 2, DIFF = 3, FAST_DIFF = 4, ROW_INDEX_V1 = 7 }

/** Thrift wrapper around org.apache.hadoop.hbase.KeepDeletedCells */
enum TKeepDeletedCells { FALSE = 0, TRUE = 1, TTL = 2 }

/** Thrift wrapper around org.apache.hadoop.hbase.TableName */
struct TTableName {
  /** namespace name */
  1: optional binary ns
  /** tablename */
  2: required binary qualifier
}

/** Thrift wrapper around org.apache.hadoop.hbase.client.ColumnFamilyDescriptor */
struct TColumnFamilyDescriptor {
  1: required binary name
  2: optional map<binary, binary> attributes
  3: optional map<string, string> configuration
  4: optional i32 blockSize
  5: optional TBloomFilterType bloomnFilterType
  6: optional TCompressionAlgorithm compressionType
  7: optional i16 dfsReplication
  8: optional TDataBlockEncoding dataBlockEncoding
  9: optional TKeepDeletedCells keepDeletedCells
  10: optional i32 maxVersions
  11: optional i32 minVersions
  12: optional i32 scope
  13: optional i32 timeToLive
  14: optional bool blockCacheEnabled
  15: optional bool cacheBloomsOnWrite
  16: optional bool cacheDataOnWrite
  17: optional bool cacheIndexesOnWrite
  18: optional bool compressTags
  19: optional bool evictBlocksOnClose
  20: optional bool inMemory

}

/** Thrift wrapper around org.apache.hadoop.hbase.client.TableDescriptor */
struct TTableDescriptor {
 1: required TTableName tableName
 2: optional list<TColumnFamilyDescriptor> columns
 3: optional map<binary, binary> attributes
 4: optional TDurability durability
}

/**
 * A TIOError exception signals that an error occurred communicating
 * to the HBase master or a HBase region server. Also used to return
 * more general HBase error conditions.
 */
exception TIOError {
  1: optional string message
  2: optional bool canRetry
}

/**
 * A TIllegalArgument exception indicates an illegal or invalid
 * argument was passed into a procedure.
 */
exception TIllegalArgument {
  1: optional string message
}

// The service, its methods in HBase's order with HBase's names, field ids and types; each one's
// comment shortened to a line (HBase's file documents every argument).
service THBaseService {
  /** One row: an empty TResult if it is not there. */
  TResult get(1: required binary table, 2: required TGet tget) throws (1: TIOError io)

  /** Several rows, in the order of the TGets (a null TResult row where one is not there). */
  list<TResult> getMultiple(1: required binary table, 2: required list<TGet> tgets) throws (1: TIOError io)

  /** Put value in a cell if it holds the expected value (none given: if the cell is absent). */
  bool checkAndPut(1: required binary table, 2: required binary row, 3: required binary family,
                   4: required binary qualifier, 5: binary value, 6: required TPut tput) throws (1: TIOError io)

  /** Commit a list of puts. */
  void putMultiple(1: required binary table, 2: required list<TPut> tputs) throws (1: TIOError io)

  /** Commit a list of deletes; always returns an empty list. */
  list<TDelete> deleteMultiple(1: required binary table, 2: required list<TDelete> tdeletes) throws (1: TIOError io)

  /** Delete if a cell holds the expected value (none given: if the cell is absent). */
  bool checkAndDelete(1: required binary table, 2: required binary row, 3: required binary family,
                      4: required binary qualifier, 5: binary value, 6: required TDelete tdelete)
    throws (1: TIOError io)

  /** Open a scanner, read up to numRows rows and close it, in one call. */
  list<TResult> getScannerResults(1: required binary table, 2: required TScan tscan, 3: i32 numRows = 1)
    throws (1: TIOError io)

  /** The locations of all the regions of a table. */
  list<THRegionLocation> getAllRegionLocations(1: required binary table) throws (1: TIOError io)

  /** Mutate a row if a cell compares with the expected value (none given: if the cell is absent). */
  bool checkAndMutate(1: required binary table, 2: required binary row, 3: required binary family,
                      4: required binary qualifier, 5: required TCompareOp compareOp, 6: binary value,
                      7: required TRowMutations rowMutations) throws (1: TIOError io)

  /** The descriptor of a table. */
  TTableDescriptor getTableDescriptor(1: required TTableName table) throws (1: TIOError io)

  /** Whether a table exists. */
  bool tableExists(1: TTableName tableName) throws (1: TIOError io)

  /** Create a table with one region more than split keys. */
  void createTable(1: required TTableDescriptor desc, 2: optional list<binary> splitKeys) throws (1: TIOError io)
}
