# Generated from openapi.json by clients/python/scripts/generate.py: do not edit.
"""The success type of each operation, named after its operationId (``save_memory`` ->
``SaveMemory``): its model from ``models`` (a union when its statuses answer different ones), ``Any``
while the document names none."""

from typing import Any, TypeAlias

from . import models

AcceptEntry: TypeAlias = models.TeamEntry
AdminDeleteMemory: TypeAlias = models.AdminMemoryDeleted
AdminGetMemory: TypeAlias = models.StructuredMemory
AdminImport: TypeAlias = models.MemoryImportReport
AdminListMemories: TypeAlias = models.StructuredMemoryList
AdminMemoryAudit: TypeAlias = models.MemoryAuditPage
AdminPatchMemory: TypeAlias = models.StructuredMemory
AdminSearchMemories: TypeAlias = models.StructuredMemoryList
ArchiveEntry: TypeAlias = models.TeamEntry
CreateBank: TypeAlias = models.BankCreated
CreateEntry: TypeAlias = models.TeamEntry
CreateProject: TypeAlias = models.Project
CreateSession: TypeAlias = models.StructuredSession
CreateSpace: TypeAlias = models.TeamSpace
CreateWorkstream: TypeAlias = models.Workstream
DeleteMemory: TypeAlias = models.BankMemoryReply
DeleteProjectMember: TypeAlias = models.ProjectMemberRemoved
DeleteRule: TypeAlias = models.BankRuleState
DeleteSession: TypeAlias = models.SessionEnded
DeleteSpaceMember: TypeAlias = models.TeamSpaceMemberRemoved
DeleteStructuredMemory: TypeAlias = models.StructuredMemoryDeleted
EntryHistory: TypeAlias = models.TeamEntryHistory
ExportBank: TypeAlias = models.ExportLink
ForgetSession: TypeAlias = models.SessionForgotten
GetAccepted: TypeAlias = models.TeamAcceptedRevision
GetBank: TypeAlias = models.BankReply
GetDenyRules: TypeAlias = models.TeamDenyRules
GetEntry: TypeAlias = models.TeamEntryDetail
GetEntryUpdates: TypeAlias = models.TeamCatchUp
GetMemory: TypeAlias = models.BankMemoryReply
GetRule: TypeAlias = models.BankRuleReply
GetSpace: TypeAlias = models.TeamSpace
GetStructuredMemory: TypeAlias = models.StructuredMemory
Health: TypeAlias = models.ServiceHealth
ImportBank: TypeAlias = models.ImportReport
ImportUploadUrl: TypeAlias = models.ImportUpload
ListAttributions: TypeAlias = models.TeamAttributionList
ListBanks: TypeAlias = models.BankListPage
ListEntries: TypeAlias = models.TeamEntryPage
ListEvents: TypeAlias = models.OrgAuditEventPage
ListMemories: TypeAlias = models.BankMemoryPage
ListProjects: TypeAlias = models.ProjectPage
ListRules: TypeAlias = models.BankRuleList
ListSessions: TypeAlias = models.StructuredSessionPage
ListSpaces: TypeAlias = models.TeamSpacePage
ListStructuredMemories: TypeAlias = models.StructuredMemoryList
ListTags: TypeAlias = models.BankTagList
ListTokens: TypeAlias = models.TokenList
ListWorkstreams: TypeAlias = models.WorkstreamPage
McpEndpoint: TypeAlias = Any
Me: TypeAlias = models.CallerToken
MemoryHistory: TypeAlias = models.MemoryHistory
MintToken: TypeAlias = models.MintedToken
OpenapiDocument: TypeAlias = models.OpenApiDocument
PatchEntry: TypeAlias = models.TeamEntry
PatchProject: TypeAlias = models.Project
PatchSpace: TypeAlias = models.TeamSpace
PinMemory: TypeAlias = models.BankMemoryReply
PostEntryUpdate: TypeAlias = models.TeamUpdateResult
PreGenerate: TypeAlias = models.HookInjection
Preview: TypeAlias = models.InjectionPreview
PurgeMemory: TypeAlias = models.BankMemoryReply
PutDenyRules: TypeAlias = models.TeamDenyRules
PutProjectMember: TypeAlias = models.ProjectMember
PutSpaceMember: TypeAlias = models.TeamSpaceMember
Recall: TypeAlias = models.BankRecall
ReloadCaches: TypeAlias = models.ReloadResult
RestoreBank: TypeAlias = models.BankReply
RetrieveEntries: TypeAlias = models.TeamRetrieval
RevokeToken: TypeAlias = models.RevokedToken
RunDoctor: TypeAlias = models.DoctorReport
SaveMemory: TypeAlias = models.MemorySaved
SaveStructuredMemory: TypeAlias = models.StructuredMemory
SearchStructuredMemories: TypeAlias = models.StructuredMemoryList
SessionContext: TypeAlias = models.SessionContext
SessionDeleted: TypeAlias = models.SessionDropped
SessionMemory: TypeAlias = models.MemoryToolResult | models.StructuredMemory
SetRule: TypeAlias = models.BankRuleState
SupersedeEntry: TypeAlias = models.TeamEntry
SupersedeMemory: TypeAlias = models.BankMemoryReply
TrashBank: TypeAlias = models.BankTrashReply
TurnCompleted: TypeAlias = models.TurnAccepted
UpdateBank: TypeAlias = models.BankReply
UpdateMemory: TypeAlias = models.BankMemoryReply
Usage: TypeAlias = models.UsageReport
